import { OutputCapture } from './output-capture';

describe('OutputCapture', () => {
  it('keeps everything under the cap', () => {
    const c = new OutputCapture(100);
    c.push(Buffer.from('hello '));
    c.push(Buffer.from('world'));
    expect(c.text()).toBe('hello world');
    expect(c.omittedBytes).toBe(0);
  });

  it('keeps the head and the tail and says how many bytes it dropped', () => {
    const c = new OutputCapture(20);
    for (let i = 0; i < 100; i++) c.push(Buffer.from(`${i % 10}`.repeat(10)));
    expect(c.omittedBytes).toBe(1000 - 20);
    expect(c.text()).toBe('0000000000\n[output truncated: 980 bytes omitted]\n9999999999');
  });
});
