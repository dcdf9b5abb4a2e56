// Date format patterns -> DuckDB's strftime / strptime patterns. Trino's date_format and
// date_parse take MySQL's specifiers; format_datetime and parse_datetime take Joda's letters.

const MYSQL = new Map<string, string>([
  ['a', '%a'], ['b', '%b'], ['c', '%-m'], ['d', '%d'], ['e', '%-d'], ['f', '%f'], ['H', '%H'], ['h', '%I'],
  ['I', '%I'], ['i', '%M'], ['j', '%j'], ['k', '%-H'], ['l', '%-I'], ['M', '%B'], ['m', '%m'], ['p', '%p'],
  ['r', '%I:%M:%S %p'], ['S', '%S'], ['s', '%S'], ['T', '%H:%M:%S'], ['v', '%V'], ['W', '%A'], ['Y', '%Y'],
  ['y', '%y'], ['%', '%%'],
]);

/** Joda letters by run length (the longest run listed wins); other letters are kept as text. */
const JODA: [string, string][] = [
  ['yyyy', '%Y'], ['yy', '%y'], ['y', '%Y'], ['MMMM', '%B'], ['MMM', '%b'], ['MM', '%m'], ['M', '%-m'],
  ['dd', '%d'], ['d', '%-d'], ['HH', '%H'], ['H', '%-H'], ['hh', '%I'], ['h', '%-I'], ['mm', '%M'], ['m', '%-M'],
  ['ss', '%S'], ['s', '%-S'], ['SSSSSS', '%f'], ['SSS', '%g'], ['a', '%p'], ['EEEE', '%A'], ['EEE', '%a'],
  ['E', '%a'], ['DDD', '%j'], ['Z', '%z'], ['ZZ', '%z'], ['z', '%Z'],
];

export function translateFormat(pattern: string, kind: 'mysql' | 'joda'): string {
  return kind === 'mysql' ? fromMysql(pattern) : fromJoda(pattern);
}

function fromMysql(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i += 1) {
    const ch = pattern[i]!;
    if (ch !== '%' || i + 1 >= pattern.length) {
      out += ch;
      continue;
    }
    const spec = pattern[i + 1]!;
    out += MYSQL.get(spec) ?? spec;
    i += 1;
  }
  return out;
}

function fromJoda(pattern: string): string {
  let out = '';
  let i = 0;
  while (i < pattern.length) {
    const ch = pattern[i]!;
    if (ch === "'") {
      const close = pattern.indexOf("'", i + 1);
      const end = close < 0 ? pattern.length : close;
      out += end === i + 1 ? "'" : pattern.slice(i + 1, end).replaceAll('%', '%%');
      i = end + 1;
      continue;
    }
    if (!/[A-Za-z]/.test(ch)) {
      out += ch === '%' ? '%%' : ch;
      i += 1;
      continue;
    }
    let run = 1;
    while (pattern[i + run] === ch) run += 1;
    const hit = JODA.find(([letters]) => letters[0] === ch && letters.length <= run);
    out += hit ? hit[1] : pattern.slice(i, i + run);
    i += hit ? hit[0].length : run;
  }
  return out;
}
