// Small line charts on a canvas: one chart per figure, several series, the last 60 samples. The
// latest values are also written as text under the chart (screen readers and tests read those).
import { el } from './api.js';

const KEEP = 60;
const COLOURS = ['#2f6fdf', '#d9822b', '#3a9a5b', '#b8336a'];

export class LineChart {
  /// `series`: the names of the lines; `unit`: appended to the values in the caption.
  constructor(parent, title, series, unit = '') {
    this.series = series;
    this.unit = unit;
    this.samples = series.map(() => []);
    this.figure = el('figure', undefined, 'chart');
    this.figure.setAttribute('aria-label', title);
    this.canvas = el('canvas');
    this.canvas.width = 320;
    this.canvas.height = 110;
    this.caption = el('figcaption');
    this.title = title;
    this.figure.append(el('span', title, 'chart-title'), this.canvas, this.caption);
    parent.append(this.figure);
    this.draw();
  }

  /// One sample per series (a number, or null when the figure is unknown this time).
  push(values) {
    values.forEach((v, i) => {
      const s = this.samples[i];
      s.push(Number.isFinite(v) ? v : null);
      if (s.length > KEEP) s.shift();
    });
    this.draw();
  }

  draw() {
    const ctx = this.canvas.getContext('2d');
    const { width: w, height: h } = this.canvas;
    ctx.clearRect(0, 0, w, h);
    const all = this.samples.flat().filter((v) => v !== null);
    const top = Math.max(1e-9, ...all) * 1.1;
    ctx.strokeStyle = '#ccc';
    ctx.beginPath();
    ctx.moveTo(0, h - 0.5);
    ctx.lineTo(w, h - 0.5);
    ctx.stroke();
    this.samples.forEach((s, i) => {
      ctx.strokeStyle = COLOURS[i % COLOURS.length];
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.fillStyle = ctx.strokeStyle;
      // Right-aligned: the newest sample at the right edge.
      const offset = KEEP - s.length;
      const at = (x, v) => [((x + offset) / (KEEP - 1)) * w, h - (v / top) * (h - 4) - 2];
      let started = false;
      s.forEach((v, x) => {
        if (v === null) { started = false; return; }
        const [px, py] = at(x, v);
        if (started) ctx.lineTo(px, py); else ctx.moveTo(px, py);
        // A sample between two gaps is a dot: a line needs two.
        if ((s[x - 1] ?? null) === null && (s[x + 1] ?? null) === null) ctx.fillRect(px - 2, py - 2, 4, 4);
        started = true;
      });
      ctx.stroke();
    });
    this.figure.dataset.samples = String(this.samples[0].length);
    this.caption.replaceChildren();
    this.series.forEach((name, i) => {
      const last = this.samples[i].at(-1);
      const item = el('span', `${name} ${last === null || last === undefined ? '–'
                                  : `${format(last)}${this.unit}`}`, 'legend');
      item.dataset.series = String(i);
      this.caption.append(item);
    });
  }
}

function format(v) {
  if (Number.isInteger(v) || Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
