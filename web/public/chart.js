// Line charts drawn by uPlot (loaded as the global `uPlot` from
// uPlot.iife.min.js). A chart sizes itself to its container and records how
// many points it shows in data-points, with a text summary for screen readers.

// Tick labels that fit a narrow axis: 250000 → "250k".
function compact(value) {
  if (value === null || value === undefined) return '';
  const size = Math.abs(value);
  if (size >= 1e6) return `${Number((value / 1e6).toPrecision(3))}M`;
  if (size >= 1e3) return `${Number((value / 1e3).toPrecision(3))}k`;
  return String(Number(value.toPrecision(3)));
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];

// options: {title, xLabel, series: [{label, stroke?, scale?}], axes?: {y: label, y2: label},
//           time: bool (x is epoch seconds), yRange?: [min, max]}
// Returns {element, setData([xs, ys1, ys2, ...]), destroy()}.
export function lineChart(options) {
  const figure = document.createElement('figure');
  figure.className = 'chart';
  const caption = document.createElement('figcaption');
  caption.textContent = options.title;
  const plotArea = document.createElement('div');
  plotArea.className = 'chart-plot';
  plotArea.setAttribute('role', 'img');
  figure.append(caption, plotArea);
  figure.dataset.points = '0';

  const hasY2 = options.series.some((s) => s.scale === 'y2');
  const axisStyle = { stroke: getComputedStyle(document.documentElement).getPropertyValue('--text-muted') || '#555',
    grid: { stroke: 'rgba(128,128,128,0.15)' }, ticks: { stroke: 'rgba(128,128,128,0.3)' } };
  const config = {
    width: 400,
    height: options.height || 200,
    scales: {
      // A time axis spans at least `minSpan` seconds so the first samples do not zoom to milliseconds.
      x: options.time
        ? { time: true, range: (u, min, max) => [Math.min(min ?? 0, (max ?? 0) - (options.minSpan || 60)), max ?? 0] }
        : { time: false },
      y: options.yRange ? { range: options.yRange } : {},
      ...(hasY2 ? { y2: {} } : {}),
    },
    series: [
      options.time
        ? { label: 'time', value: (u, t) => (t === null || t === undefined ? '—' : new Date(t * 1000).toLocaleTimeString()) }
        : { label: options.xLabel || 'step' },
      ...options.series.map((s, i) => ({
        label: s.label,
        stroke: s.stroke || PALETTE[i % PALETTE.length],
        width: 2,
        spanGaps: true,
        scale: s.scale || 'y',
        points: { show: (u, seriesIndex, i0, i1) => i1 - i0 < 40 },
        value: (u, v) => (v === null || v === undefined ? '—' : Number(v.toPrecision(4)).toString()),
      })),
    ],
    axes: [
      options.time
        ? { ...axisStyle, space: 90, values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })) }
        : { ...axisStyle, label: options.xLabel, values: (u, ticks) => ticks.map(compact) },
      { ...axisStyle, label: options.axes && options.axes.y, size: 50, values: (u, ticks) => ticks.map(compact) },
      ...(hasY2 ? [{ ...axisStyle, scale: 'y2', side: 1, label: options.axes && options.axes.y2, size: 50,
        values: (u, ticks) => ticks.map(compact), grid: { show: false } }] : []),
    ],
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
  };
  let data = [[], ...options.series.map(() => [])];
  // eslint-disable-next-line no-undef
  const plot = new uPlot(config, data, plotArea);
  const resize = () => {
    const width = Math.max(240, Math.floor(plotArea.clientWidth));
    if (width !== plot.width) plot.setSize({ width, height: config.height });
  };
  const observer = new ResizeObserver(resize);
  observer.observe(figure);

  const summarise = () => {
    const n = data[0].length;
    figure.dataset.points = String(n);
    const latest = options.series.map((s, i) => {
      const column = data[i + 1];
      for (let k = column.length - 1; k >= 0; k -= 1) {
        if (column[k] !== null && column[k] !== undefined) return `${s.label} ${Number(column[k].toPrecision(4))}`;
      }
      return null;
    }).filter(Boolean);
    plotArea.setAttribute('aria-label', n === 0
      ? `${options.title}: no data yet`
      : `${options.title}: ${n} points; latest ${latest.join(', ')}`);
  };
  summarise();

  return {
    element: figure,
    setData(next) {
      data = next;
      plot.setData(data);
      summarise();
    },
    destroy() {
      observer.disconnect();
      plot.destroy();
    },
  };
}
