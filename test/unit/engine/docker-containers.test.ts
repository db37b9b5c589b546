import { containerUlimits } from '../../../src/engine/docker-containers.js';
import { hardLimit, listeningInode, serviceLimits } from '../../../src/engine/podman-limits.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max file size             unlimited            unlimited            bytes
Max processes             unlimited            unlimited            processes
Max open files            1024                 20000                files
`;

describe('the ulimits a container gets', () => {
  test('hard limits are read from a /proc/PID/limits text; unlimited or absent rows say nothing', () => {
    expect(hardLimit(LIMITS, 'Max open files')).toBe(20000);
    expect(hardLimit(LIMITS, 'Max processes')).toBeUndefined();
    expect(hardLimit('garbage\n', 'Max open files')).toBeUndefined();
    expect(hardLimit('Max open files  1024  lots  files\n', 'Max open files')).toBeUndefined();
  });

  test('the listening socket of a path is found in /proc/net/unix, not a connected one of the same path', () => {
    const netUnix = `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000003 00000000 00000000 0001 03 5551 /run/x.sock
0000000000000000: 00000002 00000000 00010000 0001 01 4242 /run/x.sock
0000000000000000: 00000002 00000000 00010000 0001 01 4343 /run/other.sock
0000000000000000: 00000002 00000000 00010000 0001 01 4444 /run/with space.sock
`;
    expect(listeningInode(netUnix, '/run/x.sock')).toBe('4242');
    expect(listeningInode(netUnix, '/run/with space.sock')).toBe('4444');
    expect(listeningInode(netUnix, '/run/none.sock')).toBeUndefined();
  });

  test('a remote engine or a socket nobody holds: this process’s own limits', () => {
    const own = serviceLimits({ kind: 'tcp', host: '10.0.0.1', port: 2376, protocol: 'https', endpoint: 'tcp://10.0.0.1:2376' });
    expect(own).toMatch(/^Limit/);
    expect(serviceLimits({ kind: 'socket', socketPath: '/nonexistent.sock', endpoint: 'unix:///nonexistent.sock' })).toBe(own);
  });

  test('Docker gets the file size cap alone; Podman also nofile and nproc at the service’s hard limits', () => {
    const spec = { fileSizeLimitBytes: 1_000_000 };
    const fsize = { Name: 'fsize', Soft: 1_000_000, Hard: 1_000_000 };
    expect(containerUlimits(spec, 'docker', LIMITS)).toEqual([fsize]);
    expect(containerUlimits(spec, 'unknown', LIMITS)).toEqual([fsize]);
    expect(containerUlimits(spec, 'podman', LIMITS)).toEqual([fsize, { Name: 'nofile', Soft: 20000, Hard: 20000 }]);
    expect(containerUlimits(spec, 'podman', undefined)).toEqual([fsize]);
    const both = LIMITS.replace(
      'Max processes             unlimited            unlimited',
      'Max processes             3000                 4000',
    );
    expect(containerUlimits(spec, 'podman', both)).toEqual([
      fsize,
      { Name: 'nofile', Soft: 20000, Hard: 20000 },
      { Name: 'nproc', Soft: 4000, Hard: 4000 },
    ]);
    expect(containerUlimits({}, 'podman', LIMITS)).toBeUndefined();
  });
});
