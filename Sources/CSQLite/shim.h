#include <sqlite3.h>

/// `sqlite3_db_config` for the options that take an int and an optional int out-pointer
/// (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE` and the like): the C function is variadic, which Swift
/// cannot call.
static inline int jobrun_sqlite3_db_config_int(sqlite3 *db, int op, int value) {
    return sqlite3_db_config(db, op, value, (int *)0);
}
