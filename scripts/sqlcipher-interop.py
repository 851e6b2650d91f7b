#!/usr/bin/env python3
"""SQLCipher 4 (the `sqlcipher3` package from PyPI) on an encrypted store, for the tests that
show jobrun's encrypted files are SQLCipher 4's format, both ways. The key is read from a file
holding its 32 raw bytes, never from the command line.

  sqlcipher-interop.py dump <keyfile> <db>
      prints `cipher_integrity_check` problems (none when every page authenticates), SQLite's
      `integrity_check`, then `<table> <hex(key)>:<hex(value)>` for every row of every table,
      tables by name, rows by key.
  sqlcipher-interop.py write <keyfile> <db> <rows> <text> [--leave-wal]
      creates table t100 (integer keys) and t101 (blob keys, WITHOUT ROWID) with `rows` rows
      each, values `<text> <i>`; with --leave-wal the process ends without closing, so the
      last commits stay in the WAL as after a crash.
"""
import os
import sys

import sqlcipher3


def connect(keyfile, db):
    with open(keyfile, "rb") as f:
        key = f.read()
    if len(key) != 32:
        sys.exit("the key file must hold 32 bytes")
    connection = sqlcipher3.connect(db, isolation_level=None)
    connection.execute("PRAGMA key = \"x'%s'\"" % key.hex())
    return connection


def dump(keyfile, db):
    c = connect(keyfile, db)
    for (problem,) in c.execute("PRAGMA cipher_integrity_check"):
        print("problem", problem)
    for (check,) in c.execute("PRAGMA integrity_check"):
        print("integrity", check)
    names = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    for name in names:
        for (row,) in c.execute('SELECT hex(key) || \':\' || hex(value) FROM "%s" ORDER BY key' % name):
            print(name, row)


def write(keyfile, db, rows, text, leave_wal):
    c = connect(keyfile, db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("CREATE TABLE t100 (key INTEGER PRIMARY KEY, value BLOB)")
    c.execute("CREATE TABLE t101 (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID")
    for start in range(0, rows, 500):
        c.execute("BEGIN")
        for i in range(start, min(rows, start + 500)):
            value = ("%s %d" % (text, i)).encode()
            c.execute("INSERT INTO t100 (key, value) VALUES (?, ?)", (i, value))
            c.execute("INSERT INTO t101 (key, value) VALUES (?, ?)", (i.to_bytes(8, "big"), value))
        c.execute("COMMIT")
    if leave_wal:
        sys.stdout.flush()
        os._exit(0)
    c.close()


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 6 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], "--leave-wal" in sys.argv[6:])
    else:
        sys.exit(__doc__)
