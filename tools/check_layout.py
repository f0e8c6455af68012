#!/usr/bin/env python3
"""Checks the layout rules of the brief and of replay/ARCHITECTURE.md:

  - no source file longer than 1,500 lines, tests/ included;
  - no C function longer than 150 lines (from its opening line to its
    closing brace), tests/ included;
  - no file outside format/ includes a format-internal header (a header of
    format/ that is not in format/include/), none outside replay/ a
    replay-internal one (a header of replay/ that is not in
    replay/include/); the white-box tests named in WHITE_BOX may (their
    CMake targets link reelformat_internal / reelreplay_internal / reel_l7).

Usage: tools/check_layout.py [ROOT]   (exit 1 and one line per violation)
"""
import os
import re
import sys

MAX_FILE_LINES = 1500
MAX_FUNC_LINES = 150
SOURCE_EXT = ('.c', '.h')
# white-box unit tests and fuzz targets of a module's internals
WHITE_BOX = {
    'tests/test_format_util.h', 'tests/fuzz/fuzz_reader.c', 'tests/test_writer_load.c',
    'tests/test_dedup.c',
    'tests/test_replay_decode.c', 'tests/test_replay_reelplay.c',
    'tests/test_workq.c', 'tests/test_l7_util.h',
    'tests/fuzz/fuzz_l7.h', 'tests/test_content.c', 'tests/test_jsondiff.c',
    'tests/test_txncmp.c', 'tests/fuzz/fuzz_jsondiff.c', 'tests/fuzz/fuzz_replayto.c',
}


def sources(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not x.startswith('.') and not x.startswith('build')]
        for f in files:
            if f.endswith(SOURCE_EXT):
                yield os.path.normpath(os.path.join(rel, f))


def functions(lines):
    """(name, first line, last line) of each function definition: a line at
    column 0 that opens a definition, up to the next '}' at column 0."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line and not line[0].isspace() and '(' in line and not line.startswith(('#', '/', '*', '}'))
                and not line.rstrip().endswith(';')):
            # the signature may continue; the body starts at a '{' line
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith('{') and \
                    not lines[j].rstrip().endswith(';'):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith('{') and \
                    not lines[j].lstrip().startswith(('struct', 'enum', 'union')) and \
                    '=' not in lines[i]:
                k = j + 1
                while k < len(lines) and not lines[k].startswith('}'):
                    k += 1
                m = re.search(r'(\w+)\s*\(', line)
                out.append((m.group(1) if m else line.strip(), i + 1, k + 1))
                i = k + 1
                continue
        i += 1
    return out


def headers_of(root, module):
    internal = set()
    for d, _, files in os.walk(os.path.join(root, module)):
        if os.path.relpath(d, root).startswith(module + '/include'):
            continue
        internal.update(f for f in files if f.endswith('.h'))
    return internal


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    bad = []
    internal = {m: headers_of(root, m) for m in ('format', 'replay')}
    nfiles = nfuncs = 0
    longest_file = (0, '')
    longest_func = (0, '')
    for rel in sorted(sources(root)):
        with open(os.path.join(root, rel), errors='replace') as f:
            lines = f.read().split('\n')
        if lines and lines[-1] == '':
            lines.pop()
        top = rel.split(os.sep)[0]
        nfiles += 1
        longest_file = max(longest_file, (len(lines), rel))
        if len(lines) > MAX_FILE_LINES:
            bad.append('%s: %d lines (> %d)' % (rel, len(lines), MAX_FILE_LINES))
        if rel.endswith('.c') or rel.endswith('.h'):
            for name, a, b in functions(lines):
                nfuncs += 1
                longest_func = max(longest_func, (b - a + 1, '%s:%d %s' % (rel, a, name)))
                if b - a + 1 > MAX_FUNC_LINES:
                    bad.append('%s:%d: %s is %d lines (> %d)' %
                               (rel, a, name, b - a + 1, MAX_FUNC_LINES))
        for n, line in enumerate(lines, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            h = os.path.basename(m.group(1))
            for mod, hs in internal.items():
                if top != mod and h in hs and rel not in WHITE_BOX:
                    bad.append('%s:%d: includes %s, internal to %s/' % (rel, n, h, mod))
    for b in bad:
        print(b)
    print('%d source files (longest %d lines: %s), %d functions (longest %d lines: '
          '%s); %d violations' % (nfiles, longest_file[0], longest_file[1], nfuncs,
                                  longest_func[0], longest_func[1], len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
