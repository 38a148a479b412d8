// Submit: a JSON editor pre-filled from the example specs. Validate shows each
// problem beside the field it names (a marker on that line, and the message
// with its hint), the advisor's warnings and the HBM estimate; Submit opens the
// new job's page.
import { ApiError, submitJob, validateSpec } from './api.js';
import { EXAMPLES } from './examples.js';
import { findField, lineOf, locateFields } from './locate.js';
import { scriptCheckSection } from './script_check.js';
import { announce, fill, formatBytes, formatNumber, h, warningText } from './ui.js';

// The editor's text survives a visit to another page.
let draft = null;

export function mount(root) {
  const exampleSelect = h('select', { id: 'example' },
    EXAMPLES.map((e) => h('option', { value: e.id }, e.title)));
  const editor = h('textarea', {
    id: 'spec-editor', class: 'editor-text', spellcheck: 'false', wrap: 'off', autocapitalize: 'off',
    'aria-describedby': 'editor-help', 'aria-invalid': 'false',
  });
  editor.value = draft ?? EXAMPLES[0].text;
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
  const validateButton = h('button', { type: 'button', class: 'secondary', id: 'validate' }, 'Validate');
  const submitButton = h('button', { type: 'submit', id: 'submit' }, 'Submit job');
  const results = h('section', { class: 'results', id: 'results', 'aria-labelledby': 'results-heading', 'aria-live': 'polite' },
    h('h2', { id: 'results-heading' }, 'Check'),
    h('p', { class: 'muted' }, 'Validate to see problems, the performance advisor\'s warnings and the HBM estimate.'));

  let problems = [];  // [{field, message, hint}] from the last answer.

  const drawGutter = () => {
    const text = editor.value;
    const lines = text.split('\n').length;
    const fields = locateFields(text);
    const byLine = new Map();
    for (const problem of problems) {
      const at = findField(fields, problem.field);
      const line = at ? lineOf(text, at.start) : 1;
      problem.line = line;
      byLine.set(line, [...(byLine.get(line) || []), problem]);
    }
    const rows = [];
    for (let line = 1; line <= lines; line += 1) {
      const here = byLine.get(line);
      rows.push(h('div', { class: here ? 'line has-problem' : 'line', title: here ? here.map((p) => p.message).join('\n') : null },
        here ? h('span', { class: 'marker' }, '!') : null, String(line)));
    }
    fill(gutter, rows);
    gutter.scrollTop = editor.scrollTop;
  };
  editor.addEventListener('input', () => {
    draft = editor.value;
    drawGutter();
  });
  editor.addEventListener('scroll', () => { gutter.scrollTop = editor.scrollTop; });
  // Tab indents inside the editor; Escape then Tab leaves it (keyboard users are never trapped).
  let escaped = false;
  editor.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') { escaped = true; return; }
    if (event.key === 'Tab' && !event.shiftKey && !escaped) {
      event.preventDefault();
      editor.setRangeText('  ', editor.selectionStart, editor.selectionEnd, 'end');
      editor.dispatchEvent(new Event('input'));
    }
    escaped = false;
  });

  exampleSelect.addEventListener('change', () => {
    const example = EXAMPLES.find((e) => e.id === exampleSelect.value);
    editor.value = example.text;
    draft = editor.value;
    problems = [];
    editor.setAttribute('aria-invalid', 'false');
    drawGutter();
    fill(results, h('h2', { id: 'results-heading' }, 'Check'), h('p', { class: 'muted' }, `Loaded ${example.id}. Validate to check it.`));
  });

  const goToField = (problem) => {
    const fields = locateFields(editor.value);
    const at = findField(fields, problem.field);
    editor.focus();
    if (at) {
      editor.setSelectionRange(at.start, at.end);
      const lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 20;
      editor.scrollTop = Math.max(0, (lineOf(editor.value, at.start) - 3) * lineHeight);
    }
  };

  const showAnswer = (answer, verdict) => {
    problems = answer.errors || [];
    editor.setAttribute('aria-invalid', problems.length ? 'true' : 'false');
    drawGutter();
    const parts = [h('h2', { id: 'results-heading' }, 'Check'), verdict];
    if (problems.length) {
      parts.push(h('ul', { class: 'problems', 'aria-label': 'Problems' }, problems.map((problem) =>
        h('li', { class: 'problem', 'data-field': problem.field },
          h('button', { type: 'button', class: 'field-link', onclick: () => goToField(problem), title: 'Show this field in the editor' },
            h('code', {}, problem.field || '(spec)'), h('span', { class: 'line-ref' }, ` line ${problem.line}`)),
          h('p', { class: 'message' }, problem.message),
          problem.hint ? h('p', { class: 'hint' }, h('strong', {}, 'Hint: '), problem.hint) : null))));
    }
    if (answer.estimate) parts.push(estimateView(answer.estimate));
    const warnings = answer.warnings || [];
    if (warnings.length) {
      parts.push(h('h3', {}, `Advisor warnings (${warnings.length})`),
        h('ul', { class: 'warnings' }, warnings.map((w) => h('li', {}, warningText(w)))));
    }
    if (answer.resolved) parts.push(resolvedView(answer.resolved));
    fill(results, parts);
  };

  const parseOrShow = () => {
    try {
      return JSON.parse(editor.value);
    } catch (error) {
      problems = [];
      editor.setAttribute('aria-invalid', 'true');
      drawGutter();
      fill(results, h('h2', { id: 'results-heading' }, 'Check'),
        h('p', { class: 'verdict invalid', role: 'alert' }, 'The spec is not valid JSON'),
        h('p', { class: 'message' }, error.message));
      return null;
    }
  };

  const handleError = (error) => {
    if (error instanceof ApiError && error.status === 422) {
      showAnswer(error.problem, h('p', { class: 'verdict invalid', role: 'alert' },
        `✗ ${error.problem.detail || 'The spec is misconfigured'}`));
      announce(`${(error.problem.errors || []).length} problems found`);
    } else {
      fill(results, h('h2', { id: 'results-heading' }, 'Check'),
        h('p', { class: 'verdict invalid', role: 'alert' }, `✗ ${error.message}`),
        error.problem && error.problem.hint ? h('p', { class: 'hint' }, h('strong', {}, 'Hint: '), error.problem.hint) : null);
    }
  };

  const busy = (on) => {
    validateButton.disabled = on;
    submitButton.disabled = on;
  };

  validateButton.addEventListener('click', async () => {
    if (!parseOrShow()) return;
    busy(true);
    try {
      const answer = await validateSpec(editor.value);
      showAnswer(answer, h('p', { class: 'verdict valid' }, '✓ Valid: the service would accept this job'));
      announce('The spec is valid');
    } catch (error) {
      handleError(error);
    } finally {
      busy(false);
    }
  });

  const submit = async (event) => {
    event.preventDefault();
    if (!parseOrShow()) return;
    busy(true);
    try {
      const job = await submitJob(editor.value);
      if (job.array) {
        // A sweep: its children side by side.
        announce(`Job array ${job.array.id} submitted: ${job.array.size} jobs`);
        location.hash = `#/jobs?array=${job.array.id}`;
      } else {
        announce(`Job ${job.id} submitted`);
        location.hash = `#/jobs/${job.id}`;
      }
    } catch (error) {
      handleError(error);
      busy(false);
    }
  };

  root.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Submit a job')),
    h('form', { class: 'submit-layout', onsubmit: submit, 'aria-label': 'Job spec' },
      h('div', { class: 'editor-column' },
        h('div', { class: 'field inline' }, h('label', { for: 'example' }, 'Start from an example'), exampleSelect),
        h('label', { for: 'spec-editor', class: 'editor-label' }, 'Job spec (JSON)'),
        h('p', { id: 'editor-help', class: 'muted small' },
          'The trainer takes Lightning\'s Trainer arguments. Tab indents; press Escape then Tab to leave the editor.'),
        h('div', { class: 'editor' }, gutter, editor),
        h('div', { class: 'actions' }, validateButton, submitButton)),
      results),
    scriptCheckSection());
  drawGutter();
  return () => {};
}

function estimateView(estimate) {
  const hbm = estimate.hbm_per_core || {};
  const share = hbm.capacity ? hbm.total / hbm.capacity : 0;
  const rows = [
    ['Parameters', formatBytes(hbm.parameters)],
    ['Gradients', formatBytes(hbm.gradients)],
    ['Optimizer state', formatBytes(hbm.optimizer_state)],
    ['Activations', formatBytes(hbm.activations)],
  ];
  return h('div', { class: 'estimate' },
    h('h3', {}, `HBM estimate per core (${estimate.device || 'TPU'})`),
    h('p', { class: hbm.fits === false ? 'verdict invalid' : '' },
      `${formatBytes(hbm.total)} of ${formatBytes(hbm.capacity)} (${(share * 100).toPrecision(2)}%)`,
      hbm.fits === false ? ' — does not fit' : ' — fits'),
    h('meter', { min: 0, max: 1, low: 0.7, high: 0.9, optimum: 0.2, value: Math.min(1, share), 'aria-label': 'HBM used per core' }),
    h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      h('dt', {}, 'Steps'), h('dd', {}, `${estimate.steps_per_epoch ?? '—'} per epoch, ${estimate.total_steps ?? '—'} in all`),
      h('dt', {}, 'MXU utilisation'), h('dd', {}, estimate.mxu_utilization !== undefined ? `${(estimate.mxu_utilization * 100).toFixed(1)}%` : '—'),
      h('dt', {}, 'Step time'), h('dd', {}, estimate.estimated_step_seconds ? `${formatNumber(estimate.estimated_step_seconds * 1e6, 3)} µs` : '—')),
    estimate.note ? h('p', { class: 'muted small' }, estimate.note) : null);
}

function resolvedView(resolved) {
  return h('div', { class: 'resolved' },
    h('h3', {}, 'Resolved trainer'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Accelerator'), h('dd', {}, `${resolved.accelerator}${resolved.accelerator_type ? ` (${resolved.accelerator_type})` : ''}`),
      h('dt', {}, 'Cores'), h('dd', {}, `${resolved.cores} on ${resolved.hosts} host${resolved.hosts === 1 ? '' : 's'} (world size ${resolved.world_size})`),
      h('dt', {}, 'Precision'), h('dd', {}, resolved.precision),
      h('dt', {}, 'Strategy'), h('dd', {}, resolved.strategy),
      h('dt', {}, 'Lightning'), h('dd', {}, resolved.lightning_version)));
}
