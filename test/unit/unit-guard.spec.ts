/**
 * The unit project's guard (test/setup/unit-guard.ts), checked from inside the unit project: a
 * process, a connection, a listening server, a UDP socket, a file changed outside os.tmpdir() or
 * in the checkout (even a checkout under os.tmpdir(), a clone in /tmp) is refused with the rule's
 * message; a file under os.tmpdir() outside the checkout and every read are let through; and a
 * refusal the code under test swallows still fails the test.
 */
import { exec, execFileSync, fork, spawn, spawnSync } from 'node:child_process';
import * as cp from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { takeRefusals, UnitIsolationError, writable } from '../setup/unit-guard';

const RULE = /change no file outside os\.tmpdir\(\) nor in the checkout.*integration-spec\.ts/;
/** A file of the checkout, beside this spec: refused wherever the checkout lies, under os.tmpdir() or not. */
const outsideDir = __dirname;
const outside = path.join(outsideDir, 'skald-unit-guard.must-not-exist');
/** A file outside os.tmpdir() and outside the checkout. */
const elsewhere = [os.homedir(), '/var/tmp', '/usr'].find((d) => !d.startsWith(os.tmpdir()));

/** Runs `fn`, expects the guard's refusal, and clears it so this test does not fail for it. */
function refused(fn: () => unknown): UnitIsolationError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(UnitIsolationError);
  expect((caught as Error).message).toMatch(RULE);
  return caught as UnitIsolationError;
}

async function refusedAsync(fn: () => Promise<unknown>): Promise<void> {
  await expect(fn()).rejects.toThrow(RULE);
}

/** The refusals of this test so far, taken back: the guard's afterEach would fail the test for them. */
const swallowed = (): number => takeRefusals().length;

describe('the unit guard', () => {
  afterEach(() => {
    expect(fs.existsSync(outside)).toBe(false);
  });

  it('refuses to start a process, whichever child_process call', () => {
    expect(refused(() => spawn('true')).message).toContain('child_process.spawn("true")');
    refused(() => spawnSync('true'));
    refused(() => exec('true'));
    refused(() => execFileSync('true'));
    refused(() => fork('./nothing.js'));
    refused(() => cp.execSync('true'));
    expect(swallowed()).toBe(6);
  });

  it('refuses a network connection: TCP, TLS, HTTP, a Unix socket, a listening server, UDP', () => {
    expect(refused(() => net.connect(4222, '127.0.0.1')).message).toContain('127.0.0.1:4222');
    refused(() => new net.Socket().connect({ path: '/tmp/nothing.sock' }));
    refused(() => tls.connect(443, 'example.com'));
    refused(() => http.get('http://127.0.0.1:1/'));
    refused(() => net.createServer().listen(0));
    refused(() => dgram.createSocket('udp4'));
    expect(swallowed()).toBe(6);
  });

  it('refuses to change a file outside os.tmpdir(), in every form of the call', async () => {
    expect(refused(() => fs.writeFileSync(outside, 'x')).message).toContain(JSON.stringify(outside));
    refused(() => fs.mkdirSync(outside));
    refused(() => fs.rmSync(outside, { force: true }));
    refused(() => fs.renameSync(path.join(os.tmpdir(), 'a'), outside));
    refused(() => fs.openSync(outside, 'w'));
    refused(() => fs.createWriteStream(outside));
    refused(() => fs.writeFile(outside, 'x', () => undefined));
    await refusedAsync(() => fsp.writeFile(outside, 'x'));
    await refusedAsync(() => fsp.mkdir(outside, { recursive: true }));
    await refusedAsync(() => promisify(fs.unlink)(outside));
    expect(swallowed()).toBe(10);
  });

  it('remembers a refusal the code under test swallowed, to fail the test after it', () => {
    const quietly = () => {
      try {
        fs.writeFileSync(outside, 'x');
      } catch {
        // the code under test falls back on something else
      }
    };
    quietly();
    expect(takeRefusals()).toEqual([
      `fs.writeFileSync(${JSON.stringify(outside)}) outside os.tmpdir() or in the checkout`,
    ]);
  });

  it('lets files under os.tmpdir() be written and removed, and any file be read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unit-guard-'));
    fs.writeFileSync(path.join(dir, 'a'), 'x');
    await fsp.appendFile(path.join(dir, 'a'), 'y');
    expect(fs.readFileSync(path.join(dir, 'a'), 'utf8')).toBe('xy');
    expect(fs.readFileSync(__filename, 'utf8')).toContain('the unit guard');
    fs.closeSync(fs.openSync(__filename, 'r'));
    fs.rmSync(dir, { recursive: true });
    expect(takeRefusals()).toEqual([]);
    expect(writable(path.join(os.tmpdir(), 'x', '..', 'y'))).toBe(true);
    expect(writable(path.join(os.tmpdir(), '..', 'etc'))).toBe(false);
    expect(writable(`${os.tmpdir()}-other`)).toBe(false);
    expect(writable(path.join(__dirname, '../../test-results/attack-suite-x.json'))).toBe(true);
    expect(writable(path.join(outsideDir, 'test-results-other/x'))).toBe(false);
    if (elsewhere !== undefined) expect(writable(path.join(elsewhere, 'x'))).toBe(false);
  });

  it('refuses a file of the checkout, also when the checkout lies under os.tmpdir() (a clone in /tmp)', () => {
    // This checkout, wherever it is:
    refused(() => fs.writeFileSync(path.join(__dirname, '../../package.json'), '{}'));
    refused(() => fs.mkdirSync(path.join(__dirname, '../../node_modules/.skald-unit-guard')));
    expect(swallowed()).toBe(2);
    // A clone in the temp directory: its files are refused, the rest of the temp directory is not.
    const clone = path.join(os.tmpdir(), 'ci-clone');
    const places = { tmp: [os.tmpdir()], checkout: [clone], reports: [path.join(clone, 'test-results')] };
    expect(writable(path.join(clone, 'apps/gateway/src/main.ts'), places)).toBe(false);
    expect(writable(clone, places)).toBe(false);
    expect(writable(path.join(clone, 'test-results/report.json'), places)).toBe(true);
    expect(writable(path.join(os.tmpdir(), 'ci-clone-other/x'), places)).toBe(true);
    expect(writable(path.join(os.tmpdir(), 'skald-x/a'), places)).toBe(true);
  });

  it('judges a path below an open directory descriptor (/proc/self/fd/<n>/…) by where it lands', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'unit-guard-'));
    const inTmp = fs.openSync(dir, 'r');
    const inOutside = fs.openSync(outsideDir, 'r');
    try {
      expect(writable(`/proc/self/fd/${inTmp}/a.txt`)).toBe(true);
      expect(writable(`/proc/self/fd/${inOutside}/a.txt`)).toBe(false);
      fs.writeFileSync(`/proc/self/fd/${inTmp}/a.txt`, 'x');
      expect(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('x');
    } finally {
      fs.closeSync(inTmp);
      fs.closeSync(inOutside);
      fs.rmSync(dir, { recursive: true });
    }
  });
});
