// Finds where a field named by the API ("trainer.devices", "model.layers[2].out")
// sits in the JSON text of the editor, so a problem can be shown beside it.

// Returns a Map from field path to {start, end} character offsets (start is the
// key's opening quote for object members). Text that is not valid JSON yields
// the fields found before the first syntax error.
export function locateFields(text) {
  const fields = new Map();
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i])) i += 1;
  };
  const expect = (char) => {
    skipSpace();
    if (text[i] !== char) throw new SyntaxError(`expected ${char} at ${i}`);
    i += 1;
  };
  const string = () => {
    const start = i;
    if (text[i] !== '"') throw new SyntaxError(`expected a string at ${i}`);
    i += 1;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i += 1;
    return JSON.parse(text.slice(start, i));
  };
  const literal = /-?\d[\d.eE+-]*|true|false|null/y;
  const value = (path, memberStart) => {
    skipSpace();
    const start = i;
    if (text[i] === '{') {
      i += 1;
      skipSpace();
      if (text[i] === '}') i += 1;
      else {
        for (;;) {
          skipSpace();
          const keyStart = i;
          const key = string();
          expect(':');
          value(path ? `${path}.${key}` : key, keyStart);
          skipSpace();
          if (text[i] === ',') { i += 1; continue; }
          expect('}');
          break;
        }
      }
    } else if (text[i] === '[') {
      i += 1;
      skipSpace();
      if (text[i] === ']') i += 1;
      else {
        for (let n = 0; ; n += 1) {
          value(`${path}[${n}]`);
          skipSpace();
          if (text[i] === ',') { i += 1; continue; }
          expect(']');
          break;
        }
      }
    } else if (text[i] === '"') {
      string();
    } else {
      literal.lastIndex = i;
      const match = literal.exec(text);
      if (!match) throw new SyntaxError(`unexpected character at ${i}`);
      i += match[0].length;
    }
    fields.set(path, { start: memberStart ?? start, end: i });
  };
  try {
    value('');
  } catch {
    // Keep what was found: problems still land beside the fields before the error.
  }
  return fields;
}

// The location of `field`, or of its closest enclosing field present in the
// text ("model.loss" missing → "model"); null when nothing encloses it.
export function findField(fields, field) {
  let path = field || '';
  for (;;) {
    if (fields.has(path)) return { path, ...fields.get(path) };
    const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
    if (cut <= 0) return path === '' ? null : fields.has('') ? { path: '', ...fields.get('') } : null;
    path = path.slice(0, cut);
  }
}

// 1-based line number of a character offset.
export function lineOf(text, offset) {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i += 1) if (text[i] === '\n') line += 1;
  return line;
}
