/**
 * A throwaway PostgreSQL cluster for tests, from Debian's binaries: initdb into a temp folder, pg_ctl start
 * listening on a Unix socket only (no TCP port, so parallel test files never collide), one database created,
 * and everything stopped and removed afterwards. initdb and postgres refuse to run as root, so as root (CI)
 * they run as the `postgres` system user, in a temp folder that user owns; otherwise as the current user.
 *
 * `findPostgresBin()` is undefined where no binaries exist: the caller skips its tests with a notice, unless
 * KUMA_REQUIRE_POSTGRES=1, where it fails.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The folder holding initdb, pg_ctl and postgres (KUMA_POSTGRES_BIN, Debian's newest, or the PATH's). */
export function findPostgresBin(): string | undefined {
  const candidates: string[] = [];
  if (process.env.KUMA_POSTGRES_BIN) candidates.push(process.env.KUMA_POSTGRES_BIN);
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => path.join(debian, v, 'bin')));
  }
  candidates.push(...(process.env.PATH ?? '').split(path.delimiter));
  return candidates.find((dir) => dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl')));
}

export interface TestPostgres {
  /** A postgres:// URL reaching the database over the socket. */
  url: string;
  /** A URL for another fresh database in the same cluster (created now). */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: sessions are ended) and keeps its data, for an outage test. */
  pause(): Promise<void>;
  /** Starts the paused server again on the same socket and data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

interface Runner {
  user: string;
  exec(file: string, args: string[]): Promise<{ stdout: string; stderr: string }>;
}

/** As root, every command runs as the `postgres` user (runuser); otherwise as ourselves. */
function runner(): Runner {
  if (process.getuid?.() === 0) {
    return { user: 'postgres', exec: (file, args) => run('runuser', ['-u', 'postgres', '--', file, ...args]) };
  }
  return { user: os.userInfo().username, exec: (file, args) => run(file, args) };
}

export async function startTestPostgres(bin: string): Promise<TestPostgres> {
  const as = runner();
  const root = mkdtempSync(path.join(os.tmpdir(), 'kuma-pg-'));
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  chmodSync(root, 0o700);
  const data = path.join(root, 'data');
  // Socket only, in our temp folder; fsync off: a test cluster need not survive a power cut.
  const options = `-c listen_addresses='' -c unix_socket_directories='${root}' -c fsync=off -c max_connections=60`;
  const socketDir = root;
  const log = path.join(root, 'postgres.log');
  const start = () => as.exec(path.join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-o', options, '-w', '-t', '60', 'start']);
  try {
    await as.exec(path.join(bin, 'initdb'), ['-D', data, '-U', as.user, '-A', 'trust', '-E', 'UTF8', '--no-sync', '--locale=C']);
    await start();
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const urlFor = (db: string) => `postgres://${encodeURIComponent(as.user)}@/${db}?host=${encodeURIComponent(socketDir)}`;
  const createDatabase = async (name: string) => {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: urlFor('postgres') });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
    } finally {
      await client.end();
    }
    return urlFor(name);
  };
  const url = await createDatabase('kuma_test');
  return {
    url,
    createDatabase,
    async pause() {
      await as.exec(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    async resume() {
      await start();
    },
    async stop() {
      await as.exec(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
}
