import { containerUlimits, ownHardLimit } from '../../../src/engine/docker-containers.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max file size             unlimited            unlimited            bytes
Max processes             unlimited            unlimited            processes
Max open files            1024                 20000                files
`;

describe('the ulimits a container gets', () => {
  test('this process’s hard limits are read from /proc/self/limits; unlimited or absent rows say nothing', () => {
    expect(ownHardLimit('Max open files', LIMITS)).toBe(20000);
    expect(ownHardLimit('Max processes', LIMITS)).toBeUndefined();
    expect(ownHardLimit('Max open files', 'garbage\n')).toBeUndefined();
    expect(ownHardLimit('Max open files', 'Max open files  1024  lots  files\n')).toBeUndefined();
    // The real file, on Linux: a number or nothing, never NaN.
    const real = ownHardLimit('Max open files');
    expect(real === undefined || Number.isSafeInteger(real)).toBe(true);
  });

  test('Docker gets the file size cap alone; Podman also nofile and nproc at the limits this machine grants', () => {
    const spec = { fileSizeLimitBytes: 1_000_000 };
    const fsize = { Name: 'fsize', Soft: 1_000_000, Hard: 1_000_000 };
    expect(containerUlimits(spec, 'docker', LIMITS)).toEqual([fsize]);
    expect(containerUlimits(spec, 'unknown', LIMITS)).toEqual([fsize]);
    expect(containerUlimits(spec, 'podman', LIMITS)).toEqual([fsize, { Name: 'nofile', Soft: 20000, Hard: 20000 }]);
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
