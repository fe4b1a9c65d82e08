import { describe, expect, it } from 'vitest';
import { Router } from '../../../src/transport/router.js';
import type { HttpRoute } from '../../../src/api/types.js';

const route = (method: HttpRoute['method'], pattern: string): HttpRoute => ({
  method,
  pattern,
  surface: 'compat',
  handle: async () => ({ kind: 'json', body: null }),
});

describe('Router', () => {
  const router = new Router([route('GET', '/compat/v1/models'), route('GET', '/compat/v1/models/:model'), route('POST', '/compat/v1/audio/speech')]);

  it('matches static paths and extracts URL-decoded parameters', () => {
    expect(router.match('GET', '/compat/v1/models')).toMatchObject({ kind: 'found' });
    const m = router.match('GET', '/compat/v1/models/gpt%2D4o%20x');
    expect(m).toMatchObject({ kind: 'found', params: { model: 'gpt-4o x' } });
  });

  it('forgives a trailing slash', () => {
    expect(router.match('GET', '/compat/v1/models/')).toMatchObject({ kind: 'found', params: {} });
  });

  it('tells a wrong method on a served path from an unknown path', () => {
    expect(router.match('GET', '/compat/v1/audio/speech')).toEqual({ kind: 'wrong_method', allowed: ['POST'] });
    expect(router.match('GET', '/compat/v1/audio/nothing')).toEqual({ kind: 'not_found' });
    expect(router.match('GET', '/compat/v1/models/a/b')).toEqual({ kind: 'not_found' });
  });

  it('serves HEAD from the GET route', () => {
    expect(router.match('HEAD', '/compat/v1/models')).toMatchObject({ kind: 'found' });
  });

  it('does not match a malformed percent-encoding', () => {
    expect(router.match('GET', '/compat/v1/models/%E0%A4%A')).toEqual({ kind: 'not_found' });
  });

  it('keeps registration order when a static route is shadowed by an earlier parameter route', () => {
    const param = route('GET', '/x/:id');
    const fixed = route('GET', '/x/list');
    const shadowing = new Router([param, fixed]);
    expect(shadowing.match('GET', '/x/list')).toEqual({ kind: 'found', route: param, params: { id: 'list' } });
    const ordered = new Router([fixed, param]);
    expect(ordered.match('GET', '/x/list')).toEqual({ kind: 'found', route: fixed, params: {} });
    expect(ordered.match('HEAD', '/x/list')).toEqual({ kind: 'found', route: fixed, params: {} });
    expect(ordered.match('POST', '/x/list')).toEqual({ kind: 'wrong_method', allowed: ['GET', 'GET'] });
  });

  it('refuses to register the same route twice', () => {
    expect(() => router.add(route('GET', '/compat/v1/models'))).toThrow(/twice/);
  });
});
