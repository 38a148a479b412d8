// "Check a script" on the Submit page: paste or drop a Lightning train.py
// (and its requirements.txt), and POST /v1/checks answers what `tpujobs
// check` would; each finding is shown beside the line it is about.
import { checkScripts } from './api.js';
import { announce, fill, h } from './ui.js';

const EXAMPLE = `import lightning as L

trainer = L.Trainer(accelerator="tpu", devices=3, precision="16-mixed")
`;

// A textarea that also takes a file dropped on it.
function dropArea(id, label, placeholder, value) {
  const area = h('textarea', {
    id, class: 'editor-text script-text', spellcheck: 'false', wrap: 'off', autocapitalize: 'off', rows: 10, placeholder,
  });
  area.value = value;
  area.addEventListener('dragover', (event) => { event.preventDefault(); area.classList.add('dropping'); });
  area.addEventListener('dragleave', () => area.classList.remove('dropping'));
  area.addEventListener('drop', async (event) => {
    event.preventDefault();
    area.classList.remove('dropping');
    const file = event.dataTransfer?.files?.[0];
    if (!file) return;
    area.value = await file.text();
    area.dataset.fileName = file.name;
    announce(`${file.name} loaded`);
  });
  return [h('label', { for: id, class: 'editor-label' }, label), area];
}

const byLine = (findings, path) => {
  const lines = new Map();
  for (const finding of findings) {
    if (finding.path !== path) continue;
    lines.set(finding.line, [...(lines.get(finding.line) || []), finding]);
  }
  return lines;
};

function findingView(finding) {
  return h('li', { class: `finding ${finding.severity}`, 'data-rule': finding.rule, 'data-line': finding.line },
    h('p', { class: 'message' }, h('strong', {}, `${finding.severity} `), h('code', {}, finding.rule), ` line ${finding.line}, column ${finding.column}: `, finding.message),
    finding.hint ? h('p', { class: 'hint' }, h('strong', {}, 'Hint: '), finding.hint) : null);
}

// The file's lines, numbered, each followed by its findings.
function annotated(path, text, findings) {
  const lines = byLine(findings, path);
  return h('ol', { class: 'annotated', 'aria-label': `${path} with its findings` },
    text.split('\n').map((line, index) => {
      const here = lines.get(index + 1) || [];
      return h('li', { class: here.length ? 'code-line has-finding' : 'code-line', 'data-line': index + 1 },
        h('pre', {}, line || ' '),
        here.length ? h('ul', { class: 'problems findings' }, here.map(findingView)) : null);
    }));
}

export function scriptCheckSection() {
  const [scriptLabel, script] = dropArea('script-text', 'train.py', 'Paste or drop your training script', EXAMPLE);
  const [requirementsLabel, requirements] = dropArea('requirements-text', 'requirements.txt (optional)',
    'Paste or drop requirements.txt or pip freeze output', '');
  requirements.rows = 4;
  const type = h('input', { id: 'check-accelerator-type', value: 'v3-8', size: 8, spellcheck: 'false' });
  const button = h('button', { type: 'button', id: 'check-script', class: 'secondary' }, 'Check script');
  const output = h('div', { id: 'script-findings', 'aria-live': 'polite' });

  button.addEventListener('click', async () => {
    const path = script.dataset.fileName || 'train.py';
    const body = { files: [{ path, text: script.value }], accelerator_type: type.value.trim() || undefined };
    if (requirements.value.trim()) {
      body.requirements = [{ path: requirements.dataset.fileName || 'requirements.txt', text: requirements.value }];
    }
    button.disabled = true;
    try {
      const answer = await checkScripts(body);
      const errors = answer.summary.errors;
      const verdict = errors
        ? h('p', { class: 'verdict invalid', role: 'alert' }, `✗ ${errors} error${errors === 1 ? '' : 's'}: the job would be refused`)
        : h('p', { class: 'verdict valid' }, '✓ No errors in this script');
      const others = answer.findings.filter((f) => f.path !== path);
      fill(output, verdict, annotated(path, script.value, answer.findings),
        others.length ? [h('h3', {}, 'Requirements'), h('ul', { class: 'problems findings' }, others.map(findingView))] : null);
      announce(`${answer.findings.length} findings`);
    } catch (error) {
      fill(output, h('p', { class: 'verdict invalid', role: 'alert' }, `✗ ${error.message}`),
        error.problem?.hint ? h('p', { class: 'hint' }, h('strong', {}, 'Hint: '), error.problem.hint) : null);
    } finally {
      button.disabled = false;
    }
  });

  return h('section', { class: 'script-check', 'aria-labelledby': 'script-check-heading' },
    h('h2', { id: 'script-check-heading' }, 'Check a script'),
    h('p', { class: 'muted small' },
      'What `tpujobs check` says about a Lightning script: each Trainer or Fabric call, with the texts of the versions pinned in its requirements.'),
    scriptLabel, script, requirementsLabel, requirements,
    h('div', { class: 'actions' }, h('label', { for: 'check-accelerator-type' }, 'TPU type '), type, button),
    output);
}
