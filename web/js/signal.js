// `AbortSignal`s of `fit` and `OnnxModel.run`: an aborted call rejects with a PixelgradError of
// kind 'cancelled' whose `cause` is the signal's reason (an 'AbortError' DOMException unless
// the caller gave one to `abort(reason)`). Every error the package rejects with is a
// PixelgradError, so the reason travels as the cause rather than as the rejection itself.
import { PixelgradError } from './errors.js';

/** `signal` if it is an AbortSignal (or undefined/null: none), else an 'invalid' error. */
export function signalOption(signal, what) {
  if (signal === undefined || signal === null) return null;
  if (typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw new PixelgradError(`${what}: signal must be an AbortSignal (e.g. new AbortController().signal)`);
  }
  return signal;
}

function reasonText(reason) {
  if (reason === undefined || reason === null) return '';
  if (typeof reason === 'string') return ` (${reason})`;
  if (reason && reason.name === 'AbortError') return '';
  if (reason && typeof reason.message === 'string' && reason.message) return ` (${reason.message})`;
  return '';
}

/** The error of `what` stopped by `signal` (kind 'cancelled'); `where` says how far it got. */
export function cancelledError(signal, what, where = '') {
  const reason = signal ? signal.reason : undefined;
  const e = new PixelgradError(`${what}: cancelled by its AbortSignal${where ? ` ${where}` : ''}${reasonText(reason)}`, { kind: 'cancelled', op: what });
  if (reason !== undefined) e.cause = reason;
  return e;
}

/** Throws the cancelled error if `signal` is aborted. */
export function throwIfAborted(signal, what, where) {
  if (signal && signal.aborted) throw cancelledError(signal, what, where);
}

/** Calls `f` once when `signal` aborts; returns a function that stops listening. */
export function onAbort(signal, f) {
  if (!signal) return () => {};
  signal.addEventListener('abort', f, { once: true });
  return () => signal.removeEventListener('abort', f);
}
