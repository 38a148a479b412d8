// The Pool page's limits editor (issue 34): an admin reads a tenant's limits
// in effect (GET /v1/tenants/{tenant}/limits) and sets them (POST). An empty
// field takes the service's default (`serve --default-...`) when saved; a refusal shows
// the service's own words, field by field for a 422.
import { ApiError, getLimits, setLimits } from './api.js';
import { announce, fill, h } from './ui.js';

export const LIMITS = [
  { key: 'max_queued', label: 'Queued jobs at once', step: '1' },
  { key: 'max_array_size', label: 'Sweep size', step: '1' },
  { key: 'submits_per_second', label: 'Submits per second', step: 'any' },
  { key: 'submit_burst', label: 'Submit burst', step: '1' },
  { key: 'requests_per_second', label: 'Requests per second', step: 'any' },
  { key: 'request_burst', label: 'Request burst', step: '1' },
];

export function limitsEditor() {
  const tenant = h('input', { id: 'limits-tenant', type: 'text', value: 'default', maxlength: 64, required: true, autocomplete: 'off' });
  const inputs = new Map(LIMITS.map(({ key, step }) =>
    [key, h('input', { id: `limit-${key}`, name: key, type: 'number', min: 0, step, inputmode: 'decimal', placeholder: 'no bound' })]));
  const note = h('div', { id: 'limits-note', 'aria-live': 'polite' });
  const fields = h('fieldset', { class: 'limits-fields', disabled: true },
    h('legend', { class: 'visually-hidden' }, 'Limits'),
    LIMITS.map(({ key, label }) => h('div', { class: 'field' }, h('label', { for: `limit-${key}` }, label), inputs.get(key))),
    h('p', { class: 'muted small', style: { gridColumn: '1 / -1', margin: 0 } },
      'Shown: the limits in effect; an empty one is no bound. Saved: an empty field takes the service\'s default.'),
    h('button', { type: 'submit', id: 'limits-save' }, 'Save limits'));

  const show = (limits) => {
    for (const [key, input] of inputs) input.value = limits[key] === null || limits[key] === undefined ? '' : String(limits[key]);
    fields.disabled = false;
  };
  const failed = (what, error) => {
    const problems = error instanceof ApiError && Array.isArray(error.problem.errors) ? error.problem.errors : [];
    fill(note, h('div', { class: 'error-note', role: 'alert' }, `${what}: ${error.message}`,
      problems.length ? h('ul', { class: 'problems' }, problems.map((p) =>
        h('li', { 'data-field': p.field }, h('code', {}, p.field), `: ${p.message}${p.hint ? ` (${p.hint})` : ''}`))) : null));
  };
  const load = async (event) => {
    event?.preventDefault();
    const name = tenant.value.trim();
    if (!name) return;
    try {
      show(await getLimits(name));
      fill(note, h('p', { class: 'muted small' }, `Limits of ${name} in effect.`));
    } catch (error) {
      fields.disabled = true;
      failed(`Limits of ${name}`, error);
    }
  };
  const save = async (event) => {
    event.preventDefault();
    const name = tenant.value.trim();
    const body = {};
    for (const [key, input] of inputs) body[key] = input.value === '' ? null : Number(input.value);
    try {
      show(await setLimits(name, body));
      fill(note, h('p', { class: 'info-note' }, `Limits of ${name} saved.`));
      announce(`Limits of ${name} saved`);
    } catch (error) {
      failed(`Saving the limits of ${name}`, error);
    }
  };
  return h('section', { class: 'card', id: 'limits-section', 'aria-labelledby': 'limits-heading' },
    h('h2', { id: 'limits-heading' }, 'Tenant limits'),
    h('form', { class: 'field inline', onsubmit: load, 'aria-label': 'Tenant' },
      h('label', { for: 'limits-tenant' }, 'Tenant'), tenant, h('button', { type: 'submit', class: 'secondary', id: 'limits-show' }, 'Show')),
    h('form', { id: 'limits-form', onsubmit: save, 'aria-label': 'Limits' }, fields),
    note);
}
