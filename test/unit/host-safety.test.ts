import { chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { CONFIG_FILE_NAME, DEFAULT_ALLOWED_IMAGES } from '../../src/config/config-schema.js';
import { displayText } from '../../src/display-text.js';
import { imageReferenceProblem, parseImageReference } from '../../src/policy/image-ref.js';
import { checkConfigInvariants, checkImageAllowed, checkMounts, imageMatches } from '../../src/policy/policy.js';
import { hostIdentity, mountMismatches } from '../../src/sandbox/mount-identity.js';
import { containerUser } from '../../src/sandbox/container-user.js';
import { removeTempDirs, syncSandboxError, tempDir } from './helpers.js';

afterAll(removeTempDirs);

/**
 * Each class of host harm, tried with several variants of the attack: what a model, a
 * container or a checked-in config file could do to the user's machine or session.
 */

describe('image references follow Docker\u2019s grammar, before the allowlist', () => {
  const hostile = [
    'genaicode-docker/.',
    'genaicode-docker/..',
    'genaicode-docker/./x',
    'genaicode-docker/../../etc',
    'genaicode-docker//x',
    'genaicode-docker/',
    '/genaicode-docker/x',
    'genaicode-docker/X',
    'Genaicode-Docker/x',
    'genaicode-docker/x?y=1',
    'genaicode-docker/x#frag',
    'genaicode-docker/x%2F..',
    'genaicode-docker/x y',
    'genaicode-docker/x\ny',
    'genaicode-docker/x\u001b[2J',
    'genaicode-docker/x:',
    'genaicode-docker/x:.tag',
    'genaicode-docker/x:-tag',
    `genaicode-docker/x:${'t'.repeat(129)}`,
    'genaicode-docker/x@sha256:abc',
    'genaicode-docker/x@',
    `genaicode-docker/${'a'.repeat(256)}`,
    'genaicode-docker/x-',
    'genaicode-docker/_x',
    'genaicode-docker/x...y',
    'evil.com:99999/x',
    '[fe80::1%eth0]:5000/x',
    'evil_host.com/x',
    '',
    ':latest',
    '@sha256:' + 'a'.repeat(64),
  ];

  test.each(hostile)('%j is refused as INVALID_ARGUMENT, even with an allow-everything list', (ref) => {
    expect(imageReferenceProblem(ref)).toBeDefined();
    const e = syncSandboxError(() => checkImageAllowed(ref, ['**', '*', 'genaicode-docker/*']));
    expect(e.code).toBe('INVALID_ARGUMENT');
  });

  test.each([
    ['python', { path: 'python' }],
    ['python:3.12-slim', { path: 'python', tag: '3.12-slim' }],
    ['genaicode-docker/sandbox-python:latest', { path: 'genaicode-docker/sandbox-python', tag: 'latest' }],
    ['docker.io/library/node:20', { domain: 'docker.io', path: 'library/node', tag: '20' }],
    ['localhost:5000/a/b__c.d-e:T_1', { domain: 'localhost:5000', path: 'a/b__c.d-e', tag: 'T_1' }],
    ['127.0.0.1:5000/x', { domain: '127.0.0.1:5000', path: 'x' }],
    ['[::1]:5000/x:1', { domain: '[::1]:5000', path: 'x', tag: '1' }],
    [`alpine@sha256:${'a'.repeat(64)}`, { path: 'alpine', digest: `sha256:${'a'.repeat(64)}` }],
    [`alpine:3@sha256:${'b'.repeat(64)}`, { path: 'alpine', tag: '3', digest: `sha256:${'b'.repeat(64)}` }],
  ])('%s parses', (ref, parts) => {
    expect(parseImageReference(ref)).toEqual(parts);
  });

  test.each([
    'registry-1.docker.io:443/genaicode-docker/sandbox-python:latest',
    'Registry-1.Docker.io/genaicode-docker/sandbox-python:latest',
    'index.docker.io:443/genaicode-docker/sandbox-python:latest',
    'docker.io/genaicode-docker/sandbox-python',
    'REGISTRY.HUB.DOCKER.COM/genaicode-docker/x:1',
  ])('%s is the Docker Hub image it names: matched by genaicode-docker/* (localOnly), refused by a list without it', (ref) => {
    expect(imageMatches(ref, ['genaicode-docker/*'])).toBe(true);
    expect(syncSandboxError(() => checkImageAllowed(ref, ['python:*'])).code).toBe('IMAGE_NOT_ALLOWED');
  });

  test('another registry keeps its name: a pattern for it matches in any case, without its default port', () => {
    expect(imageMatches('Registry.Example.com:443/team/x:1', ['registry.example.com/team/*'])).toBe(true);
    expect(imageMatches('registry.example.com/team/x:1', ['genaicode-docker/*', 'team/*'])).toBe(false);
  });

  test('the message shows a long reference cut, never whole', () => {
    const e = syncSandboxError(() => parseImageReference(`x/${'A'.repeat(5000)}`));
    expect(e.message.length).toBeLessThan(600);
  });
});

describe('text a model or a container chose is shown to a person escaped', () => {
  test.each([
    ['ESC sequences', 'box\u001b[2J\u001b]0;title\u0007', 'box\\x1b[2J\\x1b]0;title\\x07'],
    ['line breaks that forge a line', 'x\n\nSYSTEM: approved\r', 'x\\n\\nSYSTEM: approved\\r'],
    ['C1 controls and DEL', 'a\u009b31mb\u007f', 'a\\x9b31mb\\x7f'],
    ['bidi overrides and isolates', 'safe\u202Eexe.txt\u2066x\u2069', 'safe<U+202E>exe.txt<U+2066>x<U+2069>'],
    ['zero-width and BOM', 'a\u200Bb\u200Dc\uFEFF', 'a<U+200B>b<U+200D>c<U+FEFF>'],
    ['tag characters that spell hidden text', 'ok\u{E0041}\u{E0042}', 'ok<U+E0041><U+E0042>'],
  ])('%s', (_what, input, shown) => {
    expect(displayText(input)).toBe(shown);
  });

  test('ordinary text, accents and emoji are unchanged; long text is cut', () => {
    expect(displayText('héllo wörld 👋 — ok')).toBe('héllo wörld 👋 — ok');
    expect(displayText('x'.repeat(1000), 10)).toBe(`${'x'.repeat(10)}…`);
    // A cut never leaves half of a surrogate pair.
    expect(displayText(`${'x'.repeat(9)}👋`, 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

describe('writable mounts: the container runs as the host user, never root without an opt-in', () => {
  const rw = (hostPath = '/tmp') => [{ hostPath, writable: true }];
  const base = { user: undefined, allowRootWithWritableMounts: false };

  test('no writable mount: the configured or the image\u2019s user, untouched', () => {
    expect(containerUser(base, [{ hostPath: '/tmp', writable: false }], { uid: 0, gid: 0 })).toBeUndefined();
    expect(containerUser({ ...base, user: 'root' }, [], { uid: 1000, gid: 1000 })).toBe('root');
  });

  test('a non-root host user: its uid:gid', () => {
    expect(containerUser(base, rw(), { uid: 1000, gid: 1001 })).toBe('1000:1001');
  });

  test('a root host: the owner of the mounted folder when that is not root', () => {
    const dir = tempDir('gcd-owned-');
    // As root (CI), give the folder a developer's ids; otherwise it is already ours, not root's.
    if (process.getuid?.() === 0) chownSync(dir, 4321, 4322);
    const expected = process.getuid?.() === 0 ? '4321:4322' : `${process.getuid?.()}:${process.getgid?.()}`;
    expect(containerUser(base, rw(dir), { uid: 0, gid: 0 })).toBe(expected);
  });

  test.each([
    ['a root host and a root-owned folder', base, { uid: 0, gid: 0 }],
    ['user "0"', { ...base, user: '0' }, { uid: 1000, gid: 1000 }],
    ['user "0:0"', { ...base, user: '0:0' }, { uid: 1000, gid: 1000 }],
    ['user "0:1000"', { ...base, user: '0:1000' }, { uid: 1000, gid: 1000 }],
    ['user "00" (uid 0 to the engine)', { ...base, user: '00' }, { uid: 1000, gid: 1000 }],
    ['user "000:0"', { ...base, user: '000:0' }, { uid: 1000, gid: 1000 }],
    ['user "1000:0" (root\u2019s group: set-gid root files)', { ...base, user: '1000:0' }, { uid: 1000, gid: 1000 }],
    ['a host user in group 0', base, { uid: 1000, gid: 0 }],
    ['user "root" (a name the image resolves)', { ...base, user: 'root' }, { uid: 1000, gid: 1000 }],
    ['user "toor" (any name)', { ...base, user: 'toor' }, { uid: 1000, gid: 1000 }],
    ['user "1000" (no gid: the image may give 0)', { ...base, user: '1000' }, { uid: 1000, gid: 1000 }],
    ['no host ids known', base, {}],
  ])('%s is refused', (_what, config, host) => {
    const e = syncSandboxError(() => containerUser(config, rw('/'), host));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noRootWithWritableMounts');
  });

  test('root on a folder of root\u2019s: the sentence says what works (no non-root user can write it)', () => {
    const ownedByRoot = syncSandboxError(() => containerUser(base, rw('/'), { uid: 0, gid: 0 }));
    expect(ownedByRoot.message).toContain(
      "The folder is root's (/), so no other user can write it: give it to a non-root user (chown -R 1000:1000 <folder>)",
    );
    // Another user's folder is not root's: the usual advice.
    const other = syncSandboxError(() => containerUser({ ...base, user: '0:0' }, rw('/'), { uid: 1000, gid: 1000 }));
    expect(other.message).toContain('Set user to a non-root uid:gid that may write the folder');
  });

  test('the opt-in allows root; a numeric non-root user is always allowed', () => {
    expect(containerUser({ user: undefined, allowRootWithWritableMounts: true }, rw('/'), { uid: 0, gid: 0 })).toBe('0:0');
    expect(containerUser({ ...base, user: '1234:5678' }, rw(), { uid: 0, gid: 0 })).toBe('1234:5678');
  });
});

describe('mount rules are resolved with realpath before every rule', () => {
  test('an allowlist entry that is a link to / allows nothing, not even /etc writable', () => {
    const root = tempDir('gcd-links-');
    const toRoot = join(root, 'everything');
    symlinkSync('/', toRoot);
    for (const hostPath of ['/etc', '/root', '/home', '/tmp']) {
      const e = syncSandboxError(() =>
        checkMounts([{ hostPath, containerPath: '/x', writable: true }], [{ hostPath: toRoot, writable: true }]),
      );
      expect(e.code).toBe('POLICY_VIOLATION');
    }
  });

  test('a path that does not exist yet, under a link inside the allowed folder, is where the link points', () => {
    const allowed = tempDir('gcd-allowed-');
    symlinkSync('/etc', join(allowed, 'link-to-etc'));
    const e = syncSandboxError(() =>
      checkMounts(
        [{ hostPath: join(allowed, 'link-to-etc', 'new-dir'), containerPath: '/x', writable: true }],
        [{ hostPath: allowed, writable: true }],
      ),
    );
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('mountAllowlist');
  });

  test.each(['/', '/proc', '/var/run/docker.sock', '/run'])('a configured entry linking to %s is refused at load time', (target) => {
    const root = tempDir('gcd-links-');
    const link = join(root, 'innocent');
    symlinkSync(target, link);
    const e = syncSandboxError(() => checkConfigInvariants({ mountAllow: [{ hostPath: link, writable: true }] }, 'test', root));
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('noEngineMount');
  });

  test('a link chain (link -> link -> /) is followed to its end', () => {
    const root = tempDir('gcd-links-');
    symlinkSync('/', join(root, 'a'));
    symlinkSync(join(root, 'a'), join(root, 'b'));
    expect(syncSandboxError(() => checkConfigInvariants({ mountAllow: [{ hostPath: join(root, 'b') }] }, 'test', root)).code).toBe(
      'POLICY_VIOLATION',
    );
  });
});

describe('the log folder is never inside a writable mount', () => {
  function layout() {
    const root = tempDir('gcd-mnt-');
    const project = join(root, 'project');
    const logs = join(project, '.logs');
    mkdirSync(logs, { recursive: true });
    mkdirSync(join(project, 'src'));
    return { project, logs, rules: [{ hostPath: root, writable: true }] };
  }

  test.each([
    ['the folder that holds the logs', (l: ReturnType<typeof layout>) => l.project],
    ['the logs folder itself', (l: ReturnType<typeof layout>) => l.logs],
    [
      'a folder inside the logs folder',
      (l: ReturnType<typeof layout>) => (mkdirSync(join(l.logs, 's'), { recursive: true }), join(l.logs, 's')),
    ],
    [
      'a link to the project',
      (l: ReturnType<typeof layout>) => (symlinkSync(l.project, join(dirname(l.project), 'alias')), join(dirname(l.project), 'alias')),
    ],
  ])('writable mount of %s: refused', (_what, pick) => {
    const l = layout();
    const e = syncSandboxError(() =>
      checkMounts([{ hostPath: pick(l), containerPath: '/workspace', writable: true }], l.rules, { logsDir: l.logs }),
    );
    expect(e.code).toBe('POLICY_VIOLATION');
    expect(e.data.rule).toBe('logsOutsideMounts');
  });

  test('read-only, or a sibling folder: allowed', () => {
    const l = layout();
    expect(checkMounts([{ hostPath: l.project, containerPath: '/workspace' }], l.rules, { logsDir: l.logs })).toHaveLength(1);
    expect(
      checkMounts([{ hostPath: join(l.project, 'src'), containerPath: '/workspace', writable: true }], l.rules, { logsDir: l.logs }),
    ).toHaveLength(1);
  });
});

describe('logs.dir can never name a folder of the user\u2019s', () => {
  function project(): string {
    const root = join(tempDir('gcd-proj-'), 'repo');
    mkdirSync(join(root, 'src'), { recursive: true });
    writeFileSync(join(root, '.genaicoderc'), '{"rootDir":"."}');
    return root;
  }

  test.each([
    ['"."', '.'],
    ['"./"', './'],
    ['".." (the sibling repositories)', '..'],
    ['"../.."', '../..'],
    ['"/"', '/'],
    ['the home folder', homedir()],
    ['"src/.." (the root again)', 'src/..'],
  ])('in the checked-in file: %s is INVALID_CONFIG', (_what, dir) => {
    const root = project();
    writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify({ logs: { dir } }));
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: {} }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.message).toContain(join(root, CONFIG_FILE_NAME));
    expect(e.message).toContain('logs.dir');
  });

  test('from GENAICODE_DOCKER_LOG_DIR, or through a link to the project root', () => {
    const root = project();
    expect(syncSandboxError(() => loadConfig({ cwd: root, env: { GENAICODE_DOCKER_LOG_DIR: root } })).message).toContain('environment');
    const link = join(dirname(root), 'link-to-repo');
    symlinkSync(root, link);
    expect(syncSandboxError(() => loadConfig({ cwd: root, env: { GENAICODE_DOCKER_LOG_DIR: link } })).code).toBe('INVALID_CONFIG');
  });

  test.each([
    ['inside a writable mount rule', (root: string) => ({ mountAllow: [{ hostPath: root, writable: true }], logs: { dir: 'build/logs' } })],
    [
      'the rule inside the logs folder',
      (root: string) => ({ mountAllow: [{ hostPath: join(root, 'logs', 'x'), writable: true }], logs: { dir: 'logs' } }),
    ],
    [
      'through a link that lies in a writable rule (the container could turn it)',
      (root: string) => {
        const outside = tempDir('gcd-out-');
        symlinkSync(outside, join(root, 'cache'));
        return { mountAllow: [{ hostPath: root, writable: true }], logs: { dir: join(root, 'cache', 'logs') } };
      },
    ],
  ])('logs %s: INVALID_CONFIG', (_what, make) => {
    const root = project();
    expect(syncSandboxError(() => loadConfig({ cwd: root, env: {}, overrides: make(root) })).message).toMatch(/overlap/);
  });

  test('a read-only rule over the logs is fine; the resolved folder is what the config holds', () => {
    const root = project();
    const real = tempDir('gcd-real-');
    symlinkSync(real, join(root, 'linked'));
    const c = loadConfig({
      cwd: root,
      env: {},
      overrides: { mountAllow: [{ hostPath: root, writable: false }], logs: { dir: 'linked/logs' } },
    });
    expect(c.logs.dir).toBe(join(real, 'logs'));
  });

  test('a folder of its own, inside the project or elsewhere, is fine', () => {
    const root = project();
    expect(loadConfig({ cwd: root, env: { GENAICODE_DOCKER_LOG_DIR: 'build/logs' } }).logs.dir).toBe(join(root, 'build', 'logs'));
    expect(loadConfig({ cwd: root, env: { XDG_STATE_HOME: '/var/tmp/state' } }).logs.dir).toBe('/var/tmp/state/genaicode-docker/logs');
  });
});

describe('a project\u2019s checked-in file tunes the sandbox but cannot widen whom it trusts', () => {
  function withProjectFile(content: object): string {
    const root = join(tempDir('gcd-trust-'), 'repo');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, '.genaicoderc'), '{"rootDir":"."}');
    writeFileSync(join(root, CONFIG_FILE_NAME), JSON.stringify(content));
    return root;
  }
  const noUserFile = () => ({ XDG_CONFIG_HOME: tempDir('gcd-xdg-') });

  test.each([
    ['engine.host: another engine gets the commands', { engine: { host: 'tcp://127.0.0.1:2375' } }, 'engine'],
    ['engine.socketPath', { engine: { socketPath: '/tmp/other.sock' } }, 'engine'],
    ['plugin.confirmStart: false', { plugin: { confirmStart: false } }, 'plugin.confirmStart'],
    ['images.localOnly: [] (pull the golden images from a registry)', { images: { localOnly: [] } }, 'images.localOnly'],
    ['images.localOnly without the golden images', { images: { localOnly: ['mine/*'] } }, 'images.localOnly'],
    ['user', { user: '0' }, 'user'],
    ['allowRootWithWritableMounts', { allowRootWithWritableMounts: true }, 'allowRootWithWritableMounts'],
    ['mountAllow', { mountAllow: [{ hostPath: '/home', writable: true }] }, 'mountAllow'],
  ])('%s: INVALID_CONFIG naming the field and where it belongs', (_what, content, field) => {
    const root = withProjectFile(content);
    const e = syncSandboxError(() => loadConfig({ cwd: root, env: noUserFile() }));
    expect(e.code).toBe('INVALID_CONFIG');
    expect(e.data.field).toBe(field);
    expect(e.message).toContain(join(root, CONFIG_FILE_NAME));
    expect(e.message).toContain('your own config');
  });

  test.each([
    ['everything', ['**']],
    ['another registry', ['evil.example.com/**']],
    ['a glob class that matches / at run time', ['python:*', 'python:5000[[:punct:]]evil[[:punct:]]**']],
    ['a name beside the trusted ones', ['python:*', 'evil/miner:*']],
  ])('images.allow that would widen (%s) narrows instead: an image must be on the trusted list too', (_what, allow) => {
    const c = loadConfig({ cwd: withProjectFile({ images: { allow } }), env: noUserFile() });
    expect(c.images.allow).toEqual([...DEFAULT_ALLOWED_IMAGES]);
    for (const image of ['python:5000/evil/backdoor:latest', 'evil/miner:1', 'evil.example.com/x/y:1', 'ghcr.io/a/b:1']) {
      expect(syncSandboxError(() => checkImageAllowed(image, c.images.allow, c.images.projectAllow)).code).toBe('IMAGE_NOT_ALLOWED');
    }
  });

  test('a narrower project list refuses what the trusted list allows', () => {
    const c = loadConfig({ cwd: withProjectFile({ images: { allow: ['python:3.12*'] } }), env: noUserFile() });
    expect(() => checkImageAllowed('python:3.12-slim', c.images.allow, c.images.projectAllow)).not.toThrow();
    const e = syncSandboxError(() => checkImageAllowed('node:20', c.images.allow, c.images.projectAllow));
    expect(e.code).toBe('IMAGE_NOT_ALLOWED');
    expect(e.message).toContain("this project's image allowlist");
  });

  test('tuning and narrowing are fine: lower limits, no network, a tighter allowlist, more local-only images, asking first', () => {
    const root = withProjectFile({
      limits: { memory: '256m', pids: 128 },
      network: 'none',
      images: { allow: ['python:3.12*', 'genaicode-docker/sandbox-python:*'], localOnly: ['genaicode-docker/*', 'team/*'], pull: false },
      plugin: { confirmStart: true },
    });
    const c = loadConfig({ cwd: root, env: noUserFile() });
    expect(c.images.projectAllow).toEqual(['python:3.12*', 'genaicode-docker/sandbox-python:*']);
    expect(c.network).toBe('none');
  });

  test('the user\u2019s own file (XDG or $GENAICODE_DOCKER_CONFIG) may set them, and the project file may then narrow within them', () => {
    const xdg = tempDir('gcd-xdg-');
    mkdirSync(join(xdg, 'genaicode-docker'));
    writeFileSync(
      join(xdg, 'genaicode-docker', 'config.json'),
      JSON.stringify({ plugin: { confirmStart: false }, images: { allow: ['**'] } }),
    );
    const root = withProjectFile({ images: { allow: ['evil/miner:*'] } });
    const c = loadConfig({ cwd: root, env: { XDG_CONFIG_HOME: xdg } });
    expect(c.plugin.confirmStart).toBe(false);
    expect(c.images.allow).toEqual(['**']);
    expect(() => checkImageAllowed('evil/miner:1', c.images.allow, c.images.projectAllow)).not.toThrow();
    expect(c.sources).toEqual(['defaults', join(xdg, 'genaicode-docker', 'config.json'), join(root, CONFIG_FILE_NAME)]);
    // The environment is the user's too.
    const byEnv = loadConfig({ cwd: withProjectFile({}), env: { ...noUserFile(), GENAICODE_DOCKER_CONFIRM_START: 'false' } });
    expect(byEnv.plugin.confirmStart).toBe(false);
  });
});

describe('mount identity: the folder a bind really is, from mount tables', () => {
  const HOST = [
    '27 1 254:0 / / rw - ext4 /dev/vda rw',
    '40 27 254:1 /home /home rw - ext4 /dev/vdb rw',
    '41 27 0:30 / /run rw - tmpfs tmpfs rw',
  ].join('\n');

  test('a host path takes the deepest mount holding it; octal escapes are read', () => {
    expect(hostIdentity('/tmp/a b', HOST)).toEqual({ device: '254:0', root: '/tmp/a b' });
    expect(hostIdentity('/home/dev/project', HOST)).toEqual({ device: '254:1', root: '/home/dev/project' });
    expect(hostIdentity('/run/docker.sock', HOST)).toEqual({ device: '0:30', root: '/docker.sock' });
  });

  test('a target that shows another device or folder, or no mount, is named', () => {
    const expected = [
      { containerPath: '/data', hostPath: '/tmp/a b', identity: { device: '254:0', root: '/tmp/a b' } },
      { containerPath: '/out', hostPath: '/tmp/out', identity: { device: '254:0', root: '/tmp/out' } },
      { containerPath: '/gone', hostPath: '/tmp/g', identity: { device: '254:0', root: '/tmp/g' } },
    ];
    const container = ['89 72 254:0 /tmp/a\\040b /data ro - ext4 /dev/vda rw', '90 72 0:30 / /out rw - tmpfs tmpfs rw'].join('\n');
    const problems = mountMismatches(expected, container);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^\/out: expected \/tmp\/out .* found device 0:30/);
    expect(problems[1]).toBe('/gone: no mount there');
  });
});
