import { loggableTarget } from './pino-logger';

describe('loggableTarget', () => {
  const token = `pst_${'A'.repeat(43)}`;

  it('keeps the path and the names of the query parameters, never their values', () => {
    expect(loggableTarget(`/plants?access_token=${token}&limit=5`)).toEqual({
      path: '/plants',
      query: ['access_token', 'limit'],
    });
    expect(loggableTarget('/plants?a=1&a=2&b')).toEqual({
      path: '/plants',
      query: ['a', 'b'],
    });
    expect(loggableTarget('/plants?')).toEqual({ path: '/plants', query: [] });
    expect(loggableTarget('/plants')).toEqual({ path: '/plants' });
  });

  it('hides anything shaped like a token in the path or a parameter name', () => {
    expect(loggableTarget(`/plants/${token}?${token}=1`)).toEqual({
      path: '/plants/pst_[redacted]',
      query: ['pst_[redacted]'],
    });
    expect(loggableTarget('/plants/pst_short')).toEqual({
      path: '/plants/pst_short',
    });
  });
});
