/**
 * The files and folders the configuration names, checked at start before anything is prepared: the TLS
 * certificate and key (read, and tried together as Node's TLS would), the model manifest and the temp folder.
 * A bad path used to surface only when the server came to use it — for TLS after every model had loaded
 * (≈ 18 s), and a process exiting while the model threads were still loading sometimes aborted natively
 * (exit 134) instead of reporting it. Each refusal names the variable, as the other configuration errors do.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import { invalidSettings, type Config } from './config.js';

type Problem = [field: keyof Config, message: string];

/** Throws a ConfigError listing every file setting that cannot be used (none: returns). */
export function checkConfigFiles(config: Config): void {
  const problems: Problem[] = [...tlsProblems(config), ...manifestProblems(config), ...folderProblems('tmpDir', config.tmpDir)];
  if (problems.length) throw invalidSettings(problems);
}

/** Why `file` cannot be read as a file, or null. */
function unreadable(file: string): string | null {
  try {
    if (!fs.statSync(file).isFile()) return `${file} is not a file`;
    fs.accessSync(file, fs.constants.R_OK);
    return null;
  } catch (err) {
    return describeFsError(file, err as NodeJS.ErrnoException);
  }
}

function describeFsError(file: string, err: NodeJS.ErrnoException): string {
  if (err.code === 'ENOENT') return `${file} does not exist`;
  if (err.code === 'EACCES') return `${file} cannot be read by this process (permission denied)`;
  return `${file} cannot be read (${err.code ?? err.message})`;
}

function tlsProblems(config: Config): Problem[] {
  if (!config.tlsCert || !config.tlsKey) return []; // both or neither: the schema checks that
  const problems: Problem[] = [];
  const cert = unreadable(config.tlsCert);
  const key = unreadable(config.tlsKey);
  if (cert) problems.push(['tlsCert', cert]);
  if (key) problems.push(['tlsKey', key]);
  if (problems.length) return problems;
  // Both readable: each must be PEM of its kind, and the two must belong together, or no TLS server can be built.
  const certPem = fs.readFileSync(config.tlsCert);
  const keyPem = fs.readFileSync(config.tlsKey);
  try {
    new crypto.X509Certificate(certPem);
  } catch (err) {
    problems.push(['tlsCert', `${config.tlsCert} is not a PEM certificate (${(err as Error).message})`]);
  }
  try {
    crypto.createPrivateKey(keyPem);
  } catch (err) {
    problems.push(['tlsKey', `${config.tlsKey} is not a PEM private key without a passphrase (${(err as Error).message})`]);
  }
  if (problems.length) return problems;
  try {
    tls.createSecureContext({ cert: certPem, key: keyPem });
  } catch (err) {
    problems.push(['tlsKey', `${config.tlsKey} is not the private key of the certificate ${config.tlsCert} (${(err as Error).message})`]);
  }
  return problems;
}

function manifestProblems(config: Config): Problem[] {
  if (!config.modelsManifest) return [];
  const why = unreadable(config.modelsManifest);
  return why ? [['modelsManifest', `${why} (set it to a model manifest, or to none to serve no models)`]] : [];
}

function folderProblems(field: keyof Config, folder: string): Problem[] {
  try {
    if (!fs.statSync(folder).isDirectory()) return [[field, `${folder} is not a folder`]];
    fs.accessSync(folder, fs.constants.W_OK);
    return [];
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return [[field, e.code === 'EACCES' ? `${folder} is not writable by this process` : describeFsError(folder, e)]];
  }
}
