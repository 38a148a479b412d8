// Line charts drawn by uPlot (loaded as the global `uPlot` from
// uPlot.iife.min.js). A chart sizes itself to its container and records how
// many points it shows in data-points, with a text summary for screen readers.

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
      x: { time: Boolean(options.time) },
      y: options.yRange ? { range: options.yRange } : {},
      ...(hasY2 ? { y2: {} } : {}),
    },
    series: [
      { label: options.xLabel || 'step' },
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
      { ...axisStyle, label: options.time ? null : options.xLabel },
      { ...axisStyle, label: options.axes && options.axes.y, size: 60 },
      ...(hasY2 ? [{ ...axisStyle, scale: 'y2', side: 1, label: options.axes && options.axes.y2, size: 60, grid: { show: false } }] : []),
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
