/*
 * mcgh - memory cgroup helper for the oracle guest.
 *
 * A small static program that runs inside a real Linux guest (busybox sh in
 * an initramfs, as root) and performs, for the oracle, the things a shell
 * cannot do precisely:
 *
 *   - the workloads of the memory cgroup selftests (anonymous memory, page
 *     cache, mlocked memory), optionally held until killed;
 *   - the simulator's file writers and readers (dd, cat, tar) and its
 *     synthetic page accesses (access), with the simulator's argument syntax
 *     and, for access, the simulator's page sequence;
 *   - joining a cgroup from the very process that will allocate;
 *   - control-file writes, mkdir and rmdir whose errno must be reported
 *     exactly (the shell only says "write error"), and the mounts, unmounts
 *     and unlinks of tmpfs files of a script;
 *   - shared anonymous memory and memfd (shmem);
 *   - raw reads of an already-open file descriptor from offset 0;
 *   - waiting until a held workload is ready, or gone;
 *   - running one script of a batch as a session: the script's shell and
 *     everything it started, killed and reaped when the shell ends, so that
 *     the next script starts with no process of the last.
 *
 * Every machine-readable line starts with "@@MCG " and is emitted with one
 * write(2), never through buffered stdio: the process may be SIGKILLed (by
 * the OOM killer or by the script) at any time, and the serial console
 * interleaves output of several processes.
 *
 * Build: gcc -static -O2 -Wall -Wextra -Werror -o mcgh mcgh.c -lm
 * See README.md for the command-line protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <dirent.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef O_TMPFILE
#error "O_TMPFILE is required (glibc >= 2.19, Linux >= 3.11)"
#endif

/* Directory of the files of the page-cache, dd, cat and tar workloads (an
 * ext4 mount in the guest); every file NAME of a script is DATA_DIR/NAME. */
#ifndef MCGH_DATA_DIR
#define MCGH_DATA_DIR "/data"
#endif

/* Directory of the "NAME.ready" files of held workloads. */
#ifndef MCGH_RUN_DIR
#define MCGH_RUN_DIR "/run/mcg"
#endif

/* The workloads touch and read in steps of this many bytes (the x86 page size). */
#define MCGH_PAGE 4096UL

/* Upper bounds that keep every loop finite. */
#define MAX_PASSES 1000000UL
#define MAX_TIMEOUT_MS (24UL * 3600UL * 1000UL)
#define MAX_FDREAD_BYTES (1UL << 32)
#define MAX_POLL_MS (24ULL * 3600 * 1000)   /* poll TIMEOUT_MS: at most a day */
#define MAX_EINTR_RETRIES 1000

/* Limits of the simulator's dd, cat and tar (crates/workloads). */
#define MODEL_MAX_SIZE (1ULL << 40)     /* SIZE: 1 byte to 1T */
#define MAX_MODEL_ARGS 64               /* words after a workload name */
#define MODEL_MAX_BS (1ULL << 30)       /* dd --bs: 1 byte to 1G */
#define MODEL_MAX_FILES 1000000ULL      /* tar --files: 1 to 1000000 */
#define MODEL_MAX_LOOKUPS 100000000ULL  /* dcache N: 1 to 100000000 */
#define MODEL_MAX_THREADS 100000ULL     /* threads N: 1 to 100000 */
#define MODEL_MAX_ACCESSES 1000000000000ULL /* access --count: 1 to 10^12 */
#define MODEL_MAX_RATE 1000000000ULL    /* access --rate: 1 to 10^9 per second */
#define PACE_NS 1000000ULL              /* access --rate: the shortest sleep */
#define MODEL_MAX_THETA 10.0            /* access --theta: 0 to 10 */

/* access --cold writes the missing part of its file from a buffer of this
 * many non-zero bytes, and checks it left the cache in windows of this
 * many pages (one mincore() vector). */
#define COLD_BUF (1UL << 16)
#define COLD_CHECK_PAGES 4096UL
#define COLD_DROP_TRIES 5

/* dd writes its blocks from a read-only mapping of this many zero bytes;
 * a larger --bs block is written with several write(2) calls of this size. */
#define DD_ZERO_BUF (1UL << 20)

#define EXIT_USAGE 2
#define EXIT_ENTERFAIL 126

static uint64_t pages_of(uint64_t bytes);

/* ------------------------------------------------------------------------ */
/* Output: whole lines with a single write(2).                               */
/* ------------------------------------------------------------------------ */

/* Write all of buf to fd; the first write(2) carries the whole buffer, so a
 * line shorter than PIPE_BUF arrives in one piece.  Returns 0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
    size_t done = 0;
    int retries = 0;

    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0) {
            if (errno == EINTR && ++retries < MAX_EINTR_RETRIES)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* Format one line (a newline is appended) and write it with one write(2). */
__attribute__((format(printf, 2, 3)))
static void emit(int fd, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)(sizeof(line) - 2);    /* truncated, still one line */
    line[n++] = '\n';
    (void)write_all(fd, line, (size_t)n);
}

/* "mcgh: <what>: <strerror>" on stderr. */
static void report_err(const char *what, int err)
{
    emit(2, "mcgh: %s: %s", what, strerror(err));
}

/* ------------------------------------------------------------------------ */
/* Errno names.                                                              */
/* ------------------------------------------------------------------------ */

struct errname {
    int num;
    const char *name;
};

/* Where two names share a number (EAGAIN/EWOULDBLOCK, EOPNOTSUPP/ENOTSUP,
 * EDEADLK/EDEADLOCK) the first entry wins; the preferred spelling is first. */
static const struct errname errnames[] = {
    { EPERM, "EPERM" },         { ENOENT, "ENOENT" },
    { ESRCH, "ESRCH" },         { EINTR, "EINTR" },
    { EIO, "EIO" },             { ENXIO, "ENXIO" },
    { E2BIG, "E2BIG" },         { ENOEXEC, "ENOEXEC" },
    { EBADF, "EBADF" },         { ECHILD, "ECHILD" },
    { EAGAIN, "EAGAIN" },       { ENOMEM, "ENOMEM" },
    { EACCES, "EACCES" },       { EFAULT, "EFAULT" },
    { EBUSY, "EBUSY" },         { EEXIST, "EEXIST" },
    { EXDEV, "EXDEV" },         { ENODEV, "ENODEV" },
    { ENOTDIR, "ENOTDIR" },     { EISDIR, "EISDIR" },
    { EINVAL, "EINVAL" },       { ENFILE, "ENFILE" },
    { EMFILE, "EMFILE" },       { ENOTTY, "ENOTTY" },
    { ETXTBSY, "ETXTBSY" },     { EFBIG, "EFBIG" },
    { ENOSPC, "ENOSPC" },       { ESPIPE, "ESPIPE" },
    { EROFS, "EROFS" },         { EMLINK, "EMLINK" },
    { EPIPE, "EPIPE" },         { EDOM, "EDOM" },
    { ERANGE, "ERANGE" },       { EDEADLK, "EDEADLK" },
    { ENAMETOOLONG, "ENAMETOOLONG" },
    { ENOLCK, "ENOLCK" },       { ENOSYS, "ENOSYS" },
    { ENOTEMPTY, "ENOTEMPTY" }, { ELOOP, "ELOOP" },
    { ENODATA, "ENODATA" },     { EOVERFLOW, "EOVERFLOW" },
    { EOPNOTSUPP, "EOPNOTSUPP" },
    { ETIMEDOUT, "ETIMEDOUT" }, { ECANCELED, "ECANCELED" },
    { EDQUOT, "EDQUOT" },       { ESTALE, "ESTALE" },
    { ENOTSUP, "ENOTSUP" },     { EWOULDBLOCK, "EWOULDBLOCK" },
    { EDEADLOCK, "EDEADLOCK" },
};

/* Symbolic name of err, or "E<number>" (written to buf) if unknown. */
static const char *errno_name(int err, char *buf, size_t buflen)
{
    size_t i;

    if (err == 0)
        return "0";
    for (i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
        if (errnames[i].num == err)
            return errnames[i].name;
    snprintf(buf, buflen, "E%d", err);
    return buf;
}

/* "@@MCG L<LINE> ERRNO <NAME>" */
static void emit_errno_line(const char *lineno, int err)
{
    char nb[32];

    emit(1, "@@MCG L%s ERRNO %s", lineno, errno_name(err, nb, sizeof(nb)));
}

/* ------------------------------------------------------------------------ */
/* Argument parsing.                                                         */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    static const char text[] =
        "usage: mcgh anon SIZE [--passes N] [--madvise hugepage|nohugepage] [--dontneed SIZE]\n"
        "                 [--data byte|zero|text|random|ratio=R] [--hold NAME]\n"
        "       mcgh pagecache SIZE [--file NAME] [--hold NAME]\n"
        "       mcgh mlock SIZE [--hold NAME]\n"
        "       mcgh shmem SIZE [--passes N] [--memfd] [--madvise hugepage|nohugepage]\n"
        "                  [--hold NAME]\n"
        "       mcgh dd SIZE [--file NAME] [--bs SIZE]\n"
        "       mcgh cat|readonce --file NAME [SIZE] [--cold]\n"
        "       mcgh tar SIZE [--files N] [--gzip] [--archive NAME] [--dest PREFIX] [--seed N]\n"
        "       mcgh dcache N [--hold NAME]\n"
        "       mcgh threads N [--hold NAME]\n"
        "       mcgh access SIZE [--pattern random|zipf|seq] [--theta F] [--count N] [--rate N]\n"
        "                   [--file NAME] [--seed N] [--read-only] [--mmap] [--exec]\n"
        "                   [--cold] [--hold NAME]\n"
        "       mcgh enter CGDIR ADJ -- WORKLOAD ARGS...\n"
        "       mcgh write LINE PATH VALUE\n"
        "       mcgh mkdir LINE PATH\n"
        "       mcgh rmdir LINE PATH\n"
        "       mcgh mount LINE DIR new|remount OPTIONS\n"
        "       mcgh umount LINE DIR\n"
        "       mcgh rm LINE FILE\n"
        "       mcgh fdwrite LINE FD VALUE\n"
        "       mcgh fdread FD\n"
        "       mcgh poll LINE FD TIMEOUT_MS\n"
        "       mcgh open LINE PATH\n"
        "       mcgh waitready NAME PID TIMEOUT_MS\n"
        "       mcgh size SIZE\n"
        "       mcgh session SCRIPT\n";

    (void)write_all(2, text, sizeof(text) - 1);
}

static _Noreturn void usage_exit(const char *msg, const char *arg)
{
    if (msg != NULL)
        emit(2, "mcgh: %s%s%s", msg, arg ? ": " : "", arg ? arg : "");
    usage();
    exit(EXIT_USAGE);
}

/* Parse a size the way the simulator's scripts write it: a decimal number
 * with an optional binary suffix K/M/G/T/P (case-insensitive); a fraction
 * is allowed only with a suffix ("1.5G").  A fraction is evaluated as the
 * simulator does: the number as the nearest double, times the suffix,
 * truncated to a whole byte.  Returns 0 or -1. */
static int parse_size(const char *s, uint64_t *out)
{
    char num[64];
    size_t len = strlen(s), nlen;
    unsigned shift = 0;
    uint64_t ip = 0;
    int digits = 0, have_dot = 0;
    size_t i;

    if (len == 0)
        return -1;
    switch (s[len - 1]) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    case 'p': case 'P': shift = 50; break;
    default: break;
    }
    nlen = len - (shift ? 1 : 0);
    if (nlen == 0 || nlen >= sizeof(num))
        return -1;
    for (i = 0; i < nlen; i++) {
        char c = s[i];
        if (c == '.') {
            if (have_dot)
                return -1;
            have_dot = 1;
        } else if (c >= '0' && c <= '9') {
            digits++;
        } else {
            return -1;
        }
    }
    if (digits == 0 || (have_dot && shift == 0))
        return -1;

    if (!have_dot) {
        for (i = 0; i < nlen; i++) {
            unsigned d = (unsigned)(s[i] - '0');
            if (ip > (UINT64_MAX - d) / 10)
                return -1;
            ip = ip * 10 + d;
        }
        if (ip > (UINT64_MAX >> shift))
            return -1;
        *out = ip << shift;
        return 0;
    } else {
        double f, v;

        memcpy(num, s, nlen);
        num[nlen] = '\0';
        /* Only digits and one '.' reach strtod, so no locale, sign, hex,
         * exponent or inf/nan forms; the C locale's decimal point is '.'. */
        f = strtod(num, NULL);
        v = f * (double)((uint64_t)1 << shift);
        if (!(v >= 0.0) || v > (double)UINT64_MAX / 2.0)
            return -1;
        *out = (uint64_t)v;
        return 0;
    }
}

/* A non-negative decimal integer no larger than max.  Returns 0 or -1. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;
    const char *p;

    if (*s == '\0')
        return -1;
    for (p = s; *p; p++) {
        unsigned d;
        if (*p < '0' || *p > '9')
            return -1;
        d = (unsigned)(*p - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* A ready-file name: a single non-empty path component. */
static int valid_name(const char *s)
{
    size_t len = strlen(s);

    return len > 0 && len <= 200 && strchr(s, '/') == NULL &&
           strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* A file of a script: a name of the data directory, or an absolute path to a
 * file directly in a tmpfs (the translation checks which tmpfs). */
static int valid_file_name(const char *s)
{
    const char *slash = strrchr(s, '/');

    if (s[0] != '/')
        return valid_name(s);
    return strlen(s) <= 200 && strstr(s, "/./") == NULL &&
           strstr(s, "/../") == NULL && strstr(s, "//") == NULL &&
           valid_name(slash + 1);
}

/* The LINE token, echoed into the output line: no blanks or control bytes. */
static void check_lineno(const char *s)
{
    const unsigned char *p;

    if (*s == '\0' || strlen(s) > 64)
        usage_exit("bad LINE", s);
    for (p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            usage_exit("bad LINE", s);
}

static int parse_fd(const char *s)
{
    unsigned long v;

    if (parse_uint(s, INT_MAX, &v) != 0)
        usage_exit("bad FD", s);
    return (int)v;
}

/* ------------------------------------------------------------------------ */
/* Workloads.                                                                */
/* ------------------------------------------------------------------------ */

enum wl_kind { WL_ANON, WL_PAGECACHE, WL_MLOCK, WL_DD, WL_CAT, WL_TAR, WL_DCACHE,
               WL_THREADS, WL_ACCESS, WL_SHMEM };

/* access --pattern */
enum access_pattern { PAT_RANDOM, PAT_ZIPF, PAT_SEQ };

struct workload {
    enum wl_kind kind;
    uint64_t size;          /* bytes; cat: 0 = no SIZE given */
    unsigned long passes;   /* anon: passes over all pages */
    int madvise;            /* anon, shmem: 0, or MADV_HUGEPAGE / MADV_NOHUGEPAGE */
    int memfd;              /* shmem: a memfd mapped shared, not MAP_ANONYMOUS */
    uint64_t dontneed;      /* anon: bytes freed at the end of every 2 MiB (0: none) */
    const char *file;       /* pagecache: NULL = unnamed O_TMPFILE file; dd, cat;
                               access: NULL = anonymous memory */
    const char *hold;       /* NULL = exit when done */
    uint64_t bs;            /* dd: bytes per write() block */
    uint64_t files;         /* tar: number of extracted files */
    const char *archive;    /* tar: the archive */
    const char *dest;       /* tar: prefix of the extracted files */
    uint64_t seed;          /* tar: seed of the file sizes; access: of the draws */
    int gzip;               /* tar: the archive is compressed (--gzip) */
    uint64_t count;         /* dcache: lookups; threads: threads; access: accesses */
    enum access_pattern pattern;    /* access */
    double theta;           /* access: Zipf exponent */
    int read_only;          /* access: pread() instead of pwrite() */
    int map;                /* access: 0 = read()/write(), 1 = mmap, 2 = mmap PROT_EXEC */
    int cold;               /* access, cat: extend the file with data on disk, not cached */
    uint64_t rate;          /* access: accesses per second; 0 = unpaced */
    int data;               /* anon: what each write puts in its page (DATA_*) */
    unsigned data_random;   /* anon, DATA_RATIO: random bytes at the start of a page */
};

/* anon --data: what each pass writes into a page. */
enum { DATA_BYTE, DATA_ZERO, DATA_TEXT, DATA_RANDOM, DATA_RATIO };

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* FNV-1a over len bytes, continuing from h (0 starts a new hash), as the
 * simulator's workloads hash their command line (crates/workloads/src/rand.rs). */
static uint64_t fnv1a(uint64_t h, const void *bytes, size_t len)
{
    const unsigned char *p = bytes;
    size_t i;

    if (h == 0)
        h = 0xcbf29ce484222325ULL;
    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x00000100000001b3ULL;
    }
    return h;
}

/* An unsigned 64-bit integer as Rust's u64::from_str reads it: an optional
 * '+', then decimal digits only, no overflow.  Returns 0 or -1. */
static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;

    if (*s == '+')
        s++;
    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        unsigned d;
        if (*s < '0' || *s > '9')
            return -1;
        d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Exit with usage for an argument error of a simulator-syntax workload:
 * "mcgh: <workload>: <message>". */
__attribute__((format(printf, 2, 3)))
static _Noreturn void arg_error(const char *wl, const char *fmt, ...)
{
    char msg[512], line[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(line, sizeof(line), "%s: %s", wl, msg);
    usage_exit(line, NULL);
}

/* "--x" with at least one character after the dashes: an option word. */
static int is_option_word(const char *s)
{
    return strlen(s) > 2 && s[0] == '-' && s[1] == '-';
}

/* The command line of dd, cat/readonce and tar, parsed as the simulator
 * parses it (crates/workloads/src/args.rs): positional words, and options
 * given as "--opt VALUE" or "--opt=VALUE", each at most once, with a
 * non-empty value that (when separate) is not itself an option word.
 * opts[] names the accepted options; vals[] receives their values (NULL if
 * absent).  At most one positional word, SIZE, stored in *pos (NULL if
 * absent).  Exits 2 on a bad command line. */
static void parse_model_args(const char *wl, int argc, char **argv,
                             const char *const *opts, const char **vals,
                             int nopts, const char **pos)
{
    int i, k;

    for (k = 0; k < nopts; k++)
        vals[k] = NULL;
    *pos = NULL;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *eq, *value;
        size_t keylen;

        if (!is_option_word(a)) {
            if (*pos != NULL)
                arg_error(wl, "unexpected argument '%s'", a);
            *pos = a;
            continue;
        }
        eq = strchr(a, '=');
        keylen = eq ? (size_t)(eq - a) : strlen(a);
        for (k = 0; k < nopts; k++)
            if (strlen(opts[k]) == keylen && strncmp(a, opts[k], keylen) == 0)
                break;
        if (k == nopts)
            arg_error(wl, "unknown option '%s'", a);
        if (eq != NULL) {
            value = eq + 1;
        } else if (i + 1 < argc && !is_option_word(argv[i + 1])) {
            value = argv[++i];
        } else {
            arg_error(wl, "%s needs a value", opts[k]);
        }
        if (value[0] == '\0')
            arg_error(wl, "%s needs a value", opts[k]);
        if (vals[k] != NULL)
            arg_error(wl, "%s given twice", opts[k]);
        vals[k] = value;
    }
}

/* A size argument within min..max bytes. */
static uint64_t model_size(const char *wl, const char *what, const char *v,
                           uint64_t min, uint64_t max)
{
    uint64_t b;

    if (parse_size(v, &b) != 0)
        arg_error(wl, "%s: bad size '%s'", what, v);
    if (b < min || b > max)
        arg_error(wl, "%s '%s' is out of range", what, v);
    return b;
}

/* A file name of the data directory: one path component, since the guest
 * keeps every file of a script in MCGH_DATA_DIR (the simulator has no
 * directories; a name with '/' is refused here rather than misplaced). */
static const char *model_name(const char *wl, const char *what, const char *v)
{
    if (!valid_file_name(v))
        arg_error(wl, "%s: bad name '%s' (one path component, or a tmpfs file, is needed)",
                  what, v);
    return v;
}

/* dd SIZE [--file NAME] [--bs SIZE] */
static void parse_dd(int argc, char **argv, struct workload *wl)
{
    static const char *const opts[] = { "--file", "--bs" };
    const char *vals[2], *pos;

    parse_model_args("dd", argc, argv, opts, vals, 2, &pos);
    if (pos == NULL)
        arg_error("dd", "missing SIZE");
    wl->size = model_size("dd", "SIZE", pos, 1, MODEL_MAX_SIZE);
    wl->bs = vals[1] ? model_size("dd", "--bs", vals[1], 1, MODEL_MAX_BS)
                     : (1ULL << 20);
    wl->file = vals[0] ? model_name("dd", "--file", vals[0]) : "dd.out";
}

/* Takes the flag FLAG (no value) out of ARGV: the other words go to REST
 * (room for MAX_MODEL_ARGS), their number to *NREST.  Returns whether FLAG
 * was given; twice, or with a value, is an argument error of WL. */
static int take_flag(const char *wl, const char *flag, int argc, char **argv,
                     char **rest, int *nrest)
{
    size_t flen = strlen(flag);
    int i, seen = 0;

    if (argc > MAX_MODEL_ARGS)
        arg_error(wl, "too many arguments");
    *nrest = 0;
    for (i = 0; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0) {
            if (seen)
                arg_error(wl, "%s given twice", flag);
            seen = 1;
        } else if (strncmp(argv[i], flag, flen) == 0 && argv[i][flen] == '=') {
            arg_error(wl, "%s takes no value", flag);
        } else {
            rest[(*nrest)++] = argv[i];
        }
    }
    return seen;
}

/* cat --file NAME [SIZE] [--cold] (readonce is another name for it) */
static void parse_cat(const char *name, int argc, char **argv,
                      struct workload *wl)
{
    static const char *const opts[] = { "--file" };
    const char *vals[1], *pos;
    char *rest[MAX_MODEL_ARGS];
    int nrest;

    wl->cold = take_flag(name, "--cold", argc, argv, rest, &nrest);
    parse_model_args(name, nrest, rest, opts, vals, 1, &pos);
    wl->size = pos ? model_size(name, "SIZE", pos, 1, MODEL_MAX_SIZE) : 0;
    if (vals[0] == NULL)
        arg_error(name, "missing --file NAME");
    wl->file = model_name(name, "--file", vals[0]);
}

/* tar SIZE [--files N] [--gzip] [--archive NAME] [--dest PREFIX] [--seed N] */
static void parse_tar(int argc, char **argv, struct workload *wl)
{
    static const char *const opts[] = { "--files", "--archive", "--dest",
                                        "--seed" };
    const char *vals[4], *pos;
    char *rest[MAX_MODEL_ARGS];
    int i, nrest;

    /* The one flag, --gzip, is taken out before the options are parsed;
     * the default seed below still hashes the words as written. */
    wl->gzip = take_flag("tar", "--gzip", argc, argv, rest, &nrest);
    parse_model_args("tar", nrest, rest, opts, vals, 4, &pos);
    if (pos == NULL)
        arg_error("tar", "missing SIZE");
    wl->size = model_size("tar", "SIZE", pos, 1, MODEL_MAX_SIZE);
    wl->files = 1000;
    if (vals[0] != NULL &&
        (parse_u64(vals[0], &wl->files) != 0 || wl->files < 1 ||
         wl->files > MODEL_MAX_FILES))
        arg_error("tar", "--files: bad count '%s' (expected an integer in 1..=1000000)",
                  vals[0]);
    wl->archive = vals[1] ? model_name("tar", "--archive", vals[1]) : "tar.archive";
    wl->dest = vals[2] ? model_name("tar", "--dest", vals[2]) : "tar.out";
    if (strlen(wl->dest) > 180)     /* room for ".<index>" in a name */
        arg_error("tar", "--dest: name '%s' is too long", wl->dest);
    if (vals[3] != NULL) {
        if (parse_u64(vals[3], &wl->seed) != 0)
            arg_error("tar", "--seed: bad seed '%s' (expected an unsigned integer)",
                      vals[3]);
    } else {
        /* The simulator's default: FNV-1a of the workload name and of each
         * argument as written, each followed by a NUL byte. */
        uint64_t h = fnv1a(0, "tar", 3);
        for (i = 0; i < argc; i++) {
            h = fnv1a(h, argv[i], strlen(argv[i]));
            h = fnv1a(h, "", 1);
        }
        wl->seed = h;
    }
}

/* dcache|threads N [--hold NAME]: the simulator's syntax (a count, then an
 * optional hold name). */
static void parse_count(const char *name, int argc, char **argv, uint64_t max,
                        struct workload *wl)
{
    int i;

    if (argc < 1 || is_option_word(argv[0]))
        arg_error(name, "missing N");
    if (parse_u64(argv[0], &wl->count) != 0 || wl->count == 0 || wl->count > max)
        arg_error(name, "N must be 1 to %llu: %s", (unsigned long long)max, argv[0]);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--hold") != 0)
            arg_error(name, "unknown option %s", argv[i]);
        if (i + 1 >= argc || !valid_name(argv[i + 1]))
            arg_error(name, "--hold needs a NAME");
        wl->hold = argv[++i];
    }
}

/* A real number as Rust's f64::from_str reads it, restricted to what can be
 * in range here: an optional sign, digits with an optional fraction (or a
 * fraction alone), an optional decimal exponent; no blanks, hex, inf or nan
 * (which the simulator's range check refuses anyway).  strtod() and Rust
 * both round to the nearest double.  Returns 0 or -1. */
static int parse_f64(const char *s, double *out)
{
    const char *p = s;
    int digits = 0;

    if (*p == '+' || *p == '-')
        p++;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            digits++;
        }
    }
    if (digits == 0)
        return -1;
    if (*p == 'e' || *p == 'E') {
        int edigits = 0;

        p++;
        if (*p == '+' || *p == '-')
            p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            edigits++;
        }
        if (edigits == 0)
            return -1;
    }
    if (*p != '\0' || strlen(s) > 400)
        return -1;
    *out = strtod(s, NULL);
    return 0;
}

/* access SIZE [--pattern random|zipf|seq] [--theta F] [--count N]
 * [--rate N] [--file NAME] [--seed N] [--read-only] [--mmap] [--exec] [--cold]
 * [--hold NAME], checked as crates/workloads/src/access.rs checks it.  The
 * simulator's --hold is a flag; here it is followed by the ready-file NAME,
 * which the default seed does not hash, so the seed is the simulator's. */
static void parse_access(int argc, char **argv, struct workload *wl)
{
    static const char *const opts[] = { "--pattern", "--theta", "--count",
                                        "--file", "--seed", "--rate" };
    static const char *const flags[] = { "--read-only", "--mmap", "--exec",
                                         "--cold", "--hold" };
    int seen[5] = { 0, 0, 0, 0, 0 };
    const char *vals[6], *pos;
    char *rest[64];
    uint64_t npages, h;
    int i, k, nrest = 0;

    if (argc > 64)
        arg_error("access", "too many arguments");
    h = fnv1a(0, "access", 6);
    for (i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        size_t keylen = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);

        h = fnv1a(h, argv[i], strlen(argv[i]));
        h = fnv1a(h, "", 1);
        for (k = 0; k < 5; k++)
            if (strlen(flags[k]) == keylen && strncmp(argv[i], flags[k], keylen) == 0)
                break;
        if (k == 5) {
            rest[nrest++] = argv[i];
            continue;
        }
        if (eq != NULL)
            arg_error("access", "%s takes no value", flags[k]);
        if (seen[k]++)
            arg_error("access", "%s given twice", flags[k]);
        if (k == 4) {
            if (i + 1 >= argc || !valid_name(argv[i + 1]))
                arg_error("access", "--hold needs a NAME (of the ready file)");
            wl->hold = argv[++i];
        }
    }
    parse_model_args("access", nrest, rest, opts, vals, 6, &pos);
    if (pos == NULL)
        arg_error("access", "missing SIZE");
    wl->size = model_size("access", "SIZE", pos, 1, MODEL_MAX_SIZE);
    npages = pages_of(wl->size);

    wl->pattern = PAT_RANDOM;
    if (vals[0] != NULL) {
        if (strcmp(vals[0], "random") == 0)
            wl->pattern = PAT_RANDOM;
        else if (strcmp(vals[0], "zipf") == 0)
            wl->pattern = PAT_ZIPF;
        else if (strcmp(vals[0], "seq") == 0)
            wl->pattern = PAT_SEQ;
        else
            arg_error("access", "--pattern: bad value '%s' (expected random or zipf or seq)",
                      vals[0]);
    }
    wl->theta = 0.99;
    if (vals[1] != NULL) {
        if (parse_f64(vals[1], &wl->theta) != 0 || !isfinite(wl->theta) ||
            !(wl->theta >= 0.0) || wl->theta > MODEL_MAX_THETA)
            arg_error("access", "--theta: bad number '%s' (expected a value in [0, 10])",
                      vals[1]);
        if (wl->pattern != PAT_ZIPF)
            arg_error("access", "--theta needs --pattern zipf");
    }
    wl->count = 10 * npages;
    if (vals[2] != NULL &&
        (parse_u64(vals[2], &wl->count) != 0 || wl->count < 1 ||
         wl->count > MODEL_MAX_ACCESSES))
        arg_error("access", "--count: bad count '%s' (expected an integer in 1..=1000000000000)",
                  vals[2]);
    wl->file = vals[3] ? model_name("access", "--file", vals[3]) : NULL;
    wl->seed = h;
    if (vals[4] != NULL && parse_u64(vals[4], &wl->seed) != 0)
        arg_error("access", "--seed: bad seed '%s' (expected an unsigned integer)",
                  vals[4]);
    wl->rate = 0;
    if (vals[5] != NULL &&
        (parse_u64(vals[5], &wl->rate) != 0 || wl->rate < 1 ||
         wl->rate > MODEL_MAX_RATE))
        arg_error("access", "--rate: bad count '%s' (expected an integer in 1..=1000000000)",
                  vals[5]);
    wl->read_only = seen[0];
    wl->map = seen[2] ? 2 : seen[1] ? 1 : 0;
    wl->cold = seen[3];
    if (wl->read_only && wl->file == NULL)
        arg_error("access", "--read-only needs --file (anonymous pages are written)");
    if ((wl->map || wl->cold) && wl->file == NULL)
        arg_error("access", "--mmap, --exec and --cold need --file");
}

/* Parse "WORKLOAD ARGS..." starting at argv[0]: anon|pagecache|mlock SIZE
 * [options] with the selftests' helpers' options, or dd|cat|readonce|tar
 * with the simulator's syntax.  Returns 0, or -1 if argv[0] is not a
 * workload name; exits on bad args. */
static int parse_workload(int argc, char **argv, struct workload *wl)
{
    int i;

    memset(wl, 0, sizeof(*wl));
    wl->passes = 1;
    if (argc < 1)
        return -1;
    if (strcmp(argv[0], "dd") == 0) {
        wl->kind = WL_DD;
        parse_dd(argc - 1, argv + 1, wl);
        return 0;
    }
    if (strcmp(argv[0], "cat") == 0 || strcmp(argv[0], "readonce") == 0) {
        wl->kind = WL_CAT;
        parse_cat(argv[0], argc - 1, argv + 1, wl);
        return 0;
    }
    if (strcmp(argv[0], "tar") == 0) {
        wl->kind = WL_TAR;
        parse_tar(argc - 1, argv + 1, wl);
        return 0;
    }
    if (strcmp(argv[0], "dcache") == 0 || strcmp(argv[0], "threads") == 0) {
        int dc = strcmp(argv[0], "dcache") == 0;
        wl->kind = dc ? WL_DCACHE : WL_THREADS;
        parse_count(argv[0], argc - 1, argv + 1,
                    dc ? MODEL_MAX_LOOKUPS : MODEL_MAX_THREADS, wl);
        return 0;
    }
    if (strcmp(argv[0], "access") == 0) {
        wl->kind = WL_ACCESS;
        parse_access(argc - 1, argv + 1, wl);
        return 0;
    }
    if (strcmp(argv[0], "anon") == 0)
        wl->kind = WL_ANON;
    else if (strcmp(argv[0], "pagecache") == 0)
        wl->kind = WL_PAGECACHE;
    else if (strcmp(argv[0], "mlock") == 0)
        wl->kind = WL_MLOCK;
    else if (strcmp(argv[0], "shmem") == 0)
        wl->kind = WL_SHMEM;
    else
        return -1;
    if (argc < 2)
        usage_exit("missing SIZE", NULL);
    if (parse_size(argv[1], &wl->size) != 0)
        usage_exit("bad size", argv[1]);
    if (wl->size > (uint64_t)SIZE_MAX / 2 || wl->size > (uint64_t)INT64_MAX / 2)
        usage_exit("size too large", argv[1]);

    for (i = 2; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--memfd") == 0 && wl->kind == WL_SHMEM) {
            wl->memfd = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage_exit("option needs a value", opt);
        if (strcmp(opt, "--hold") == 0) {
            if (!valid_name(argv[i + 1]))
                usage_exit("bad hold NAME", argv[i + 1]);
            wl->hold = argv[i + 1];
        } else if (strcmp(opt, "--passes") == 0 &&
                   (wl->kind == WL_ANON || wl->kind == WL_SHMEM)) {
            if (parse_uint(argv[i + 1], MAX_PASSES, &wl->passes) != 0)
                usage_exit("bad --passes", argv[i + 1]);
        } else if (strcmp(opt, "--dontneed") == 0 && wl->kind == WL_ANON) {
            if (parse_size(argv[i + 1], &wl->dontneed) != 0 || wl->dontneed == 0 ||
                wl->dontneed > 2 * 1024 * 1024)
                usage_exit("bad --dontneed", argv[i + 1]);
        } else if (strcmp(opt, "--madvise") == 0 &&
                   (wl->kind == WL_ANON || wl->kind == WL_SHMEM)) {
            if (strcmp(argv[i + 1], "hugepage") == 0)
                wl->madvise = MADV_HUGEPAGE;
            else if (strcmp(argv[i + 1], "nohugepage") == 0)
                wl->madvise = MADV_NOHUGEPAGE;
            else
                usage_exit("bad --madvise", argv[i + 1]);
        } else if (strcmp(opt, "--data") == 0 && wl->kind == WL_ANON) {
            const char *v = argv[i + 1];
            if (strcmp(v, "byte") == 0)
                wl->data = DATA_BYTE;
            else if (strcmp(v, "zero") == 0)
                wl->data = DATA_ZERO;
            else if (strcmp(v, "text") == 0)
                wl->data = DATA_TEXT;
            else if (strcmp(v, "random") == 0)
                wl->data = DATA_RANDOM;
            else if (strncmp(v, "ratio=", 6) == 0) {
                char *end;
                double r = strtod(v + 6, &end);
                if (*end != '\0' || !(r >= 1.0) || r > 4096.0)
                    usage_exit("bad --data ratio", v);
                wl->data = DATA_RATIO;
                wl->data_random = (unsigned)ceil((double)MCGH_PAGE / r);
            } else
                usage_exit("bad --data", v);
        } else if (strcmp(opt, "--file") == 0 && wl->kind == WL_PAGECACHE) {
            if (argv[i + 1][0] == '\0')
                usage_exit("bad --file NAME", argv[i + 1]);
            wl->file = argv[i + 1];
        } else {
            usage_exit("unknown option", opt);
        }
        i++;
    }
    return 0;
}

/* Announce that a held workload is in place: create the empty file
 * MCGH_RUN_DIR/NAME.ready, then sleep until killed.  A workload that
 * failed earlier never gets here, so "waitready" then reports it gone. */
static _Noreturn void hold_forever(const char *name)
{
    char path[PATH_MAX];
    int fd;

    /* Create the parent of MCGH_RUN_DIR (e.g. /run) and MCGH_RUN_DIR itself. */
    snprintf(path, sizeof(path), "%s", MCGH_RUN_DIR);
    {
        char *slash = strrchr(path, '/');
        if (slash != NULL && slash != path) {
            *slash = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST) {
                report_err(path, errno);
                exit(1);
            }
        }
    }
    if (mkdir(MCGH_RUN_DIR, 0755) != 0 && errno != EEXIST) {
        report_err(MCGH_RUN_DIR, errno);
        exit(1);
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.ready", MCGH_RUN_DIR,
                         name) >= sizeof(path)) {
        report_err("ready file", ENAMETOOLONG);
        exit(1);
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        report_err(path, errno);
        exit(1);
    }
    close(fd);

    /* Held until a signal kills us; this loop is intentionally unbounded. */
    for (;;)
        pause();
}

/* splitmix64: the stream of a page's --data bytes. */
static uint64_t data_next(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The words of --data text. */
static const char *const data_words[32] = {
    "the", "of", "and", "to", "in", "memory", "page", "is", "for", "that",
    "with", "cgroup", "on", "as", "reclaim", "by", "it", "from", "this", "be",
    "kernel", "are", "at", "or", "limit", "an", "which", "swap", "not", "when",
    "file", "each",
};

/* One pass's write of the page at p (page number idx) as wl->data asks: one
 * byte (the pass number, the rest of the page as it was: zeros), zeros,
 * words and spaces, random bytes, or random bytes at the start of the page
 * and zeros after (--data ratio=R). */
static void write_page(const struct workload *wl, volatile char *p, size_t idx,
                       unsigned long pass)
{
    uint64_t x = ((uint64_t)idx << 20) ^ (uint64_t)pass;
    size_t i = 0, n;

    switch (wl->data) {
    case DATA_BYTE:
        p[0] = (char)(pass + 1);
        break;
    case DATA_ZERO:
        p[0] = 0;
        break;
    case DATA_TEXT:
        while (i < MCGH_PAGE) {
            const char *w = data_words[data_next(&x) % 32];
            for (; *w != '\0' && i < MCGH_PAGE; w++)
                p[i++] = *w;
            if (i < MCGH_PAGE)
                p[i++] = (data_next(&x) % 12 == 0) ? '\n' : ' ';
        }
        break;
    case DATA_RANDOM:
    case DATA_RATIO:
        n = wl->data == DATA_RANDOM ? MCGH_PAGE : wl->data_random;
        for (; i < n; i += 8) {
            uint64_t r = data_next(&x);
            size_t k;
            for (k = 0; k < 8 && i + k < n; k++)
                p[i + k] = (char)(r >> (8 * k));
        }
        break;
    }
}

/* The end of anon and shmem: write every page of buf (one byte of it unless
 * --data says otherwise), PASSES times, then hold (if asked) or unmap it. */
static int write_hold_unmap(const struct workload *wl, volatile char *buf, size_t size)
{
    unsigned long pass;
    size_t off;

    for (pass = 0; pass < wl->passes; pass++)
        for (off = 0; off < size; off += MCGH_PAGE)
            write_page(wl, buf + off, off / MCGH_PAGE, pass);
    if (wl->dontneed > 0 && size > 0) {
        /* The last DONTNEED bytes of every whole 2 MiB-aligned range of the mapping
         * (the simulator's mappings start aligned; here the ranges are found). */
        const uintptr_t huge = 2UL * 1024 * 1024;
        uintptr_t start = ((uintptr_t)buf + huge - 1) & ~(huge - 1);
        uintptr_t end = (uintptr_t)buf + size;
        for (; start + huge <= end; start += huge)
            if (madvise((void *)(start + huge - wl->dontneed), wl->dontneed,
                        MADV_DONTNEED) != 0) {
                report_err("madvise", errno);
                return 1;
            }
    }

    if (wl->hold != NULL)
        hold_forever(wl->hold);
    if (size > 0)
        munmap((void *)buf, size);
    return 0;
}

/* alloc_anon() of the kernel memcg selftests: private anonymous memory,
 * one written byte per 4 KiB page, so that every page is faulted in and
 * charged; --passes repeats the writes over the resident pages. */
static int run_anon(const struct workload *wl)
{
    size_t size = (size_t)wl->size;
    volatile char *buf = NULL;

    if (size > 0) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            report_err("mmap", errno);
            return 1;
        }
        if (wl->madvise != 0 && madvise(p, size, wl->madvise) != 0) {
            report_err("madvise", errno);
            return 1;
        }
        buf = p;
    }
    return write_hold_unmap(wl, buf, size);
}

/* DATA_DIR/name into path.  Returns 0, or -1 (reported) if too long. */
static int data_path(char *path, size_t len, const char *name)
{
    int n = name[0] == '/' ? snprintf(path, len, "%s", name)
                           : snprintf(path, len, "%s/%s", MCGH_DATA_DIR, name);

    if (n < 0 || (size_t)n >= len) {
        report_err(name, ENAMETOOLONG);
        return -1;
    }
    return 0;
}

/* The simulator's shmem: a shared anonymous mapping (or a memfd mapped
 * shared) of SIZE, every page written PASSES times, then unmapped, which
 * frees it. */
static int run_shmem(const struct workload *wl)
{
    size_t size = (size_t)wl->size;
    volatile char *buf = NULL;

    if (size > 0) {
        void *p;
        if (wl->memfd) {
            int fd = memfd_create("mcgh-shmem", 0);
            if (fd < 0) {
                report_err("memfd_create", errno);
                return 1;
            }
            if (ftruncate(fd, (off_t)size) != 0) {
                report_err("ftruncate", errno);
                return 1;
            }
            p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        } else {
            p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
        }
        if (p == MAP_FAILED) {
            report_err("mmap", errno);
            return 1;
        }
        if (wl->madvise != 0 && madvise(p, size, wl->madvise) != 0) {
            report_err("madvise", errno);
            return 1;
        }
        buf = p;
    }
    return write_hold_unmap(wl, buf, size);
}

/* alloc_pagecache() of the kernel memcg selftests: grow a file on the data
 * filesystem by SIZE (a sparse extension) and read the new range page by
 * page, so that the page cache fills with (zero) pages charged to the
 * reader.  An unnamed O_TMPFILE file frees its cache when closed; a named
 * file keeps it (and its size, which the next run extends). */
static int run_pagecache(const struct workload *wl)
{
    char path[PATH_MAX];
    static char buf[MCGH_PAGE];
    struct stat st;
    off_t start, end, off;
    int fd;

    if (wl->file == NULL) {
        fd = open(MCGH_DATA_DIR, O_TMPFILE | O_RDWR | O_EXCL, 0600);
        if (fd < 0) {
            report_err("open " MCGH_DATA_DIR " (O_TMPFILE)", errno);
            return 1;
        }
    } else {
        if (data_path(path, sizeof(path), wl->file) != 0)
            return 1;
        fd = open(path, O_RDWR | O_CREAT, 0600);
        if (fd < 0) {
            report_err(path, errno);
            return 1;
        }
    }
    /* Several tasks may grow the same named file at once (the selftests share one fd,
     * which serialises them): take a lock so each one adds and reads its own SIZE. */
    if (flock(fd, LOCK_EX) != 0) {
        report_err("flock", errno);
        return 1;
    }
    if (fstat(fd, &st) != 0) {
        report_err("fstat", errno);
        return 1;
    }
    if (st.st_size > INT64_MAX / 2) {
        report_err("fstat", EFBIG);
        return 1;
    }
    end = st.st_size + (off_t)wl->size;
    if (ftruncate(fd, end) != 0) {
        report_err("ftruncate", errno);
        return 1;
    }
    if (flock(fd, LOCK_UN) != 0) {
        report_err("flock", errno);
        return 1;
    }
    start = st.st_size - st.st_size % (off_t)MCGH_PAGE;
    for (off = start; off < end; off += (off_t)MCGH_PAGE) {
        ssize_t n;
        int retries = 0;

        do
            n = pread(fd, buf, sizeof(buf), off);
        while (n < 0 && errno == EINTR && ++retries < MAX_EINTR_RETRIES);
        if (n < 0) {
            report_err("pread", errno);
            return 1;
        }
        if (n == 0)
            break;      /* truncated behind our back: nothing more to read */
    }

    if (wl->hold != NULL)
        hold_forever(wl->hold);     /* keeps fd (and an O_TMPFILE file) open */
    close(fd);
    return 0;
}

/* alloc_anon_mlock() of the kernel memcg selftests: map anonymous memory and
 * mlock() it, which faults the whole range in one call inside the kernel. */
static int run_mlock(const struct workload *wl)
{
    size_t size = (size_t)wl->size;
    void *p = NULL;

    if (size > 0) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            report_err("mmap", errno);
            return 1;
        }
        if (mlock(p, size) != 0) {
            report_err("mlock", errno);
            return 1;
        }
    }
    if (wl->hold != NULL)
        hold_forever(wl->hold);
    if (size > 0)
        munmap(p, size);
    return 0;
}

/* Open DATA_DIR/NAME for reading and writing, creating it if missing, and
 * extend it sparse with ftruncate to PAGES pages if it has fewer.  Returns
 * the descriptor and stores the file's size in *size, or reports the error
 * and returns -1. */
static int open_data_extended(const char *name, uint64_t pages, uint64_t *size)
{
    char path[PATH_MAX];
    struct stat st;
    int fd;

    if (data_path(path, sizeof(path), name) != 0)
        return -1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        report_err(path, errno);
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        report_err("fstat", errno);
        close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    if (pages_of(*size) < pages) {
        *size = pages * MCGH_PAGE;
        if (ftruncate(fd, (off_t)*size) != 0) {
            report_err("ftruncate", errno);
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Whole pages of a byte count. */
static uint64_t pages_of(uint64_t bytes)
{
    return bytes / MCGH_PAGE + (bytes % MCGH_PAGE != 0);
}

/* read(2) into buf, retrying EINTR: the bytes read, or -1 (errno set). */
static ssize_t read_retry(int fd, void *buf, size_t len)
{
    ssize_t n;
    int retries = 0;

    do
        n = read(fd, buf, len);
    while (n < 0 && errno == EINTR && ++retries < MAX_EINTR_RETRIES);
    return n;
}

/* The simulator's dd: open DATA_DIR/NAME with O_TRUNC (which drops the
 * cached pages of an earlier content) and write SIZE zero bytes in --bs
 * blocks, then close without fsync: the pages stay dirty in the page cache,
 * charged to the writer's cgroup, until writeback cleans them.  The data
 * come from a read-only anonymous mapping, which maps only the shared zero
 * page and so charges no memory; blocks larger than that buffer (1M) are
 * written with several write(2) calls, which changes only the number of
 * system calls. */
static int run_dd(const struct workload *wl)
{
    char path[PATH_MAX];
    size_t buflen = wl->bs < DD_ZERO_BUF ? (size_t)wl->bs : DD_ZERO_BUF;
    uint64_t left = wl->size;
    const char *zeros;
    void *p;
    int fd;

    if (data_path(path, sizeof(path), wl->file) != 0)
        return 1;
    p = mmap(NULL, buflen, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        report_err("mmap", errno);
        return 1;
    }
    zeros = p;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        report_err(path, errno);
        return 1;
    }
    while (left > 0) {
        uint64_t block = left < wl->bs ? left : wl->bs;

        left -= block;
        while (block > 0) {
            size_t len = block < buflen ? (size_t)block : buflen;
            if (write_all(fd, zeros, len) != 0) {
                report_err("write", errno);
                return 1;
            }
            block -= len;
        }
    }
    if (close(fd) != 0) {
        report_err("close", errno);
        return 1;
    }
    munmap(p, buflen);
    return 0;
}

/* The simulator's cat (alias readonce): open DATA_DIR/NAME (creating it
 * empty if missing); with SIZE, a file of fewer pages is first extended
 * sparse with ftruncate to SIZE rounded up to whole pages; then read() the
 * file a page at a time up to its size at that point. */
static int run_cat(const struct workload *wl)
{
    static char buf[MCGH_PAGE];
    uint64_t end, done = 0;
    int fd;

    fd = open_data_extended(wl->file, wl->size > 0 ? pages_of(wl->size) : 0, &end);
    if (fd < 0)
        return 1;
    while (done < end) {
        ssize_t n = read_retry(fd, buf, sizeof(buf));
        if (n < 0) {
            report_err("read", errno);
            return 1;
        }
        if (n == 0)
            break;      /* truncated behind our back: nothing more to read */
        done += (uint64_t)n;
    }
    close(fd);
    return 0;
}

/* splitmix64 (crates/workloads/src/rand.rs): the next output. */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z;

    *state += 0x9e3779b97f4a7c15ULL;
    z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The log-uniform weight in 1..1000 of the next file: e^(u * ln 1000) for u
 * uniform in [0, 1) with 53 random bits. */
static double tar_weight(uint64_t *state)
{
    double u = (double)(splitmix64_next(state) >> 11) *
               (1.0 / 9007199254740992.0);
    return exp(u * log(1000.0));
}

/* The sizes of tar's output files, drawn one at a time.  The simulator
 * (split_sizes in crates/workloads/src/tar.rs) draws a weight per file from
 * --seed, gives file i 1 + floor(spare * w_i / sum of w) pages (spare =
 * total - n) and one more page to each of the first files until the sizes
 * sum to the total.  This does the same in three passes over the generator
 * instead of keeping an array, which would be anonymous memory charged to
 * the task's cgroup (8 MB for a million files).  The sizes are the model's
 * as long as the C library's exp() rounds like the one the simulator was
 * linked with; whatever the rounding, the count and the sum are exact: no
 * file is given more pages than the files after it leave, and the last
 * file gets the rest. */
struct tar_plan {
    uint64_t total;     /* pages of the archive */
    uint64_t n;         /* number of files */
    uint64_t spare;     /* total - n */
    uint64_t extra;     /* files that get one more page */
    uint64_t seed, state;
    double sum;         /* of the weights */
    uint64_t next;      /* index of the next file */
    uint64_t placed;    /* pages given to files so far */
};

static uint64_t tar_base_size(const struct tar_plan *tp, double w)
{
    /* The quotient is non-negative, so the conversion truncates as floor. */
    return 1 + (uint64_t)((double)tp->spare * w / tp->sum);
}

static void tar_plan_init(struct tar_plan *tp, uint64_t total, uint64_t files,
                          uint64_t seed)
{
    uint64_t i, assigned = 0;

    memset(tp, 0, sizeof(*tp));
    tp->total = total;
    tp->n = files < 1 ? 1 : files > total ? total : files;
    tp->spare = total - tp->n;
    tp->seed = seed;
    tp->state = seed;
    for (i = 0; i < tp->n; i++)
        tp->sum += tar_weight(&tp->state);
    tp->state = seed;
    for (i = 0; i < tp->n; i++)
        assigned += tar_base_size(tp, tar_weight(&tp->state));
    tp->extra = assigned < total ? total - assigned : 0;
    tp->state = seed;
}

/* The size in pages of the next file. */
static uint64_t tar_next_size(struct tar_plan *tp)
{
    uint64_t size = tar_base_size(tp, tar_weight(&tp->state));
    uint64_t after = tp->n - tp->next - 1;      /* files still to come */
    uint64_t room = tp->total - tp->placed - after;

    if (tp->next < tp->extra)
        size++;
    if (size > room || after == 0)
        size = room;
    tp->next++;
    tp->placed += size;
    return size;
}

/* The archive page holding extracted page i: with --gzip, 2 archive pages
 * per 9 extracted ones, as the simulator's GZIP_RATIO. */
static uint64_t tar_archive_page(const struct workload *wl, uint64_t i)
{
    return wl->gzip ? i * 2 / 9 : i;
}

/* The simulator's tar: extend DATA_DIR/ARCHIVE sparse to its size (SIZE in
 * whole pages, or with --gzip 2/9 of that) if it is missing or smaller, then
 * for each extracted page read the archive page holding it (once) and write
 * a page to the current output file.  The files PREFIX.0 .. PREFIX.{N-1} are
 * written in turn, each opened with O_TRUNC when its turn comes and closed
 * (without fsync) when full.  gunzip's CPU is not spent: the oracle compares
 * memory, not time. */
static int run_tar(const struct workload *wl)
{
    char path[PATH_MAX], name[256];
    static char buf[MCGH_PAGE];
    struct tar_plan tp;
    uint64_t total = pages_of(wl->size), pos, cur = 0, size = 0, off = 0;
    uint64_t apages = tar_archive_page(wl, total - 1) + 1, asize;
    int afd, ofd = -1;

    afd = open_data_extended(wl->archive, apages, &asize);
    if (afd < 0)
        return 1;
    tar_plan_init(&tp, total, wl->files, wl->seed);
    for (pos = 0; pos < total; pos++) {
        ssize_t n;

        if (ofd < 0) {
            snprintf(name, sizeof(name), "%s.%llu", wl->dest,
                     (unsigned long long)cur);
            if (data_path(path, sizeof(path), name) != 0)
                return 1;
            ofd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (ofd < 0) {
                report_err(path, errno);
                return 1;
            }
            size = tar_next_size(&tp);
            off = 0;
        }
        if (pos == 0 ||
            tar_archive_page(wl, pos - 1) != tar_archive_page(wl, pos)) {
            n = read_retry(afd, buf, sizeof(buf));
            if (n < 0) {
                report_err("read", errno);
                return 1;
            }
            if (n < (ssize_t)sizeof(buf))   /* past a truncation: zeros */
                memset(buf + n, 0, sizeof(buf) - (size_t)n);
        }
        if (write_all(ofd, buf, sizeof(buf)) != 0) {
            report_err("write", errno);
            return 1;
        }
        if (++off == size) {
            if (close(ofd) != 0) {
                report_err("close", errno);
                return 1;
            }
            ofd = -1;
            cur++;
        }
    }
    close(afd);
    return 0;
}

/* alloc_dcache() of the kernel's test_kmem.c: stat() of N paths that do
 * not exist, with long names, so that each leaves a negative dentry (and an
 * external name) in the dentry cache, charged to the caller's cgroup. */
static int run_dcache(const struct workload *wl)
{
    char buf[256];
    struct stat st;
    uint64_t i;

    for (i = 0; i < wl->count; i++) {
        snprintf(buf, sizeof(buf),
                 MCGH_DATA_DIR "/something-non-existent-with-a-long-name-%64llu-%d",
                 (unsigned long long)i, (int)getpid());
        (void)stat(buf, &st);
    }
    if (wl->hold != NULL)
        hold_forever(wl->hold);
    return 0;
}

static void *thread_sleep(void *arg)
{
    (void)arg;
    /* Sleeps until the process is killed; intentionally unbounded. */
    for (;;)
        pause();
    return NULL;
}

static void *thread_exit(void *arg)
{
    return arg;
}

/* test_kmem.c's kernel-stack workload: N threads with default attributes.
 * With --hold they sleep until the process is killed; without, each thread
 * exits at once and is joined. */
static int run_threads(const struct workload *wl)
{
    uint64_t i;
    pthread_t t;

    for (i = 0; i < wl->count; i++) {
        int err = pthread_create(&t, NULL,
                                 wl->hold != NULL ? thread_sleep : thread_exit,
                                 NULL);
        if (err != 0) {
            report_err("pthread_create", err);
            return 1;
        }
        if (wl->hold == NULL)
            (void)pthread_join(t, NULL);
    }
    if (wl->hold != NULL)
        hold_forever(wl->hold);
    return 0;
}

/* The simulator's random generators (crates/workloads/src/rand.rs), ported
 * operation for operation so that access draws the same pages: splitmix64
 * (splitmix64_next above), below() by a 128-bit multiply, unit() with 53
 * random bits, and the Zipf sampler by rejection-inversion.  The C library's
 * exp, log, expm1 and log1p stand for Rust's f64::exp, ln, exp_m1 and ln_1p,
 * which call the same functions of the C library on Linux. */

/* Uniform in 0..n (n > 0). */
static uint64_t rng_below(uint64_t *state, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)splitmix64_next(state) *
                       (unsigned __int128)n) >> 64);
}

/* Uniform in [0, 1). */
static double rng_unit(uint64_t *state)
{
    return (double)(splitmix64_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* Rust's `f as u64`: saturating, NaN gives 0 (a C cast of an out-of-range
 * double is undefined). */
static uint64_t f64_to_u64(double f)
{
    if (!(f > 0.0))
        return 0;
    if (f >= 18446744073709551616.0)
        return UINT64_MAX;
    return (uint64_t)f;
}

/* (e^x - 1) / x, continuous at 0. */
static double expm1_over_x(double x)
{
    if (fabs(x) > 1e-8)
        return expm1(x) / x;
    return 1.0 + x * (0.5 + x / 6.0);
}

/* ln(1 + x) / x, continuous at 0. */
static double ln1p_over_x(double x)
{
    if (fabs(x) > 1e-8)
        return log1p(x) / x;
    return 1.0 - x * (0.5 - x / 3.0);
}

struct zipf {
    uint64_t n;
    double theta;
    double lo;      /* H(1.5) - h(1) */
    double hi;      /* H(n + 0.5) */
};

/* h(x) = x^-theta */
static double zipf_h(const struct zipf *z, double x)
{
    return exp(-z->theta * log(x));
}

/* H(x) = (x^(1-theta) - 1) / (1 - theta), or ln x for theta = 1 */
static double zipf_big_h(const struct zipf *z, double x)
{
    double lx = log(x);

    return expm1_over_x((1.0 - z->theta) * lx) * lx;
}

static double zipf_big_h_inv(const struct zipf *z, double y)
{
    /* fmax, as Rust's f64::max, returns the other operand for a NaN. */
    double t = fmax(y * (1.0 - z->theta), -1.0);

    return exp(ln1p_over_x(t) * y);
}

static void zipf_init(struct zipf *z, uint64_t n, double theta)
{
    z->n = n < 1 ? 1 : n;
    z->theta = fmax(theta, 0.0);
    z->lo = 0.0;
    z->hi = 0.0;
    z->lo = zipf_big_h(z, 1.5) - 1.0;
    z->hi = zipf_big_h(z, (double)z->n + 0.5);
}

/* A rank in 0..n; 0 is the most popular.  At most 64 tries, as the model. */
static uint64_t zipf_sample(const struct zipf *z, uint64_t *state)
{
    uint64_t k = 1;
    int i;

    for (i = 0; i < 64; i++) {
        double u = z->lo + rng_unit(state) * (z->hi - z->lo);
        double x = zipf_big_h_inv(z, u);
        double kf;

        k = f64_to_u64(x + 0.5);
        if (k < 1)
            k = 1;
        if (k > z->n)
            k = z->n;
        kf = (double)k;
        if (u >= zipf_big_h(z, kf + 0.5) - zipf_h(z, kf))
            break;
    }
    return k - 1;
}

/* The page sequence of access. */
struct access_gen {
    enum access_pattern pattern;
    uint64_t pages, state, next;
    struct zipf zipf;
};

static void access_gen_init(struct access_gen *g, const struct workload *wl)
{
    memset(g, 0, sizeof(*g));
    g->pattern = wl->pattern;
    g->pages = pages_of(wl->size);
    g->state = wl->seed;
    if (g->pattern == PAT_ZIPF)
        zipf_init(&g->zipf, g->pages, wl->theta);
}

static uint64_t access_next(struct access_gen *g)
{
    uint64_t i;

    switch (g->pattern) {
    case PAT_ZIPF:
        return zipf_sample(&g->zipf, &g->state);
    case PAT_SEQ:
        i = g->next;
        g->next = i + 1 == g->pages ? 0 : i + 1;
        return i;
    case PAT_RANDOM:
        break;
    }
    return rng_below(&g->state, g->pages);
}

/* How many pages of fd's byte range [start, end) (start page-aligned) are in
 * the page cache, by mincore() on a mapping that is never touched; -1 if it
 * cannot be told. */
static int64_t cached_pages(int fd, uint64_t start, uint64_t end)
{
    static unsigned char vec[COLD_CHECK_PAGES];
    uint64_t off, n = 0;
    size_t len = (size_t)(end - start);
    char *p;

    if (end <= start)
        return 0;
    p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (p == MAP_FAILED)
        return -1;
    for (off = 0; off < len; off += COLD_CHECK_PAGES * MCGH_PAGE) {
        size_t chunk = len - off < COLD_CHECK_PAGES * MCGH_PAGE
                           ? len - off : COLD_CHECK_PAGES * MCGH_PAGE;
        size_t i;

        if (mincore(p + off, chunk, vec) != 0) {
            munmap(p, len);
            return -1;
        }
        for (i = 0; i < pages_of(chunk); i++)
            n += vec[i] & 1;
    }
    munmap(p, len);
    return (int64_t)n;
}

/* access --cold: make DATA_DIR/NAME at least SIZE (whole pages) long, the
 * added part written with non-zero data, synced to disk and dropped from
 * the page cache (POSIX_FADV_DONTNEED), as a file written before the caches
 * were dropped: reading it costs disk reads.  mincore() checks that the
 * pages left the cache; a few more tries are made if some did not (a page
 * under writeback is skipped by DONTNEED).  Returns 0 or 1 (reported). */
static int access_extend_cold(const struct workload *wl)
{
    static char buf[COLD_BUF];
    char path[PATH_MAX];
    struct stat st;
    uint64_t end = pages_of(wl->size) * MCGH_PAGE, off, start;
    int64_t left = -1;
    int fd, tries;

    if (data_path(path, sizeof(path), wl->file) != 0)
        return 1;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        report_err(path, errno);
        return 1;
    }
    if (fstat(fd, &st) != 0) {
        report_err("fstat", errno);
        close(fd);
        return 1;
    }
    if (pages_of((uint64_t)st.st_size) >= pages_of(wl->size)) {
        close(fd);
        return 0;
    }
    memset(buf, 0xa5, sizeof(buf));
    /* Each pwrite() adds at least one byte or fails: at most end - size rounds. */
    for (off = (uint64_t)st.st_size; off < end;) {
        size_t len = end - off < sizeof(buf) ? (size_t)(end - off) : sizeof(buf);
        ssize_t n;
        int retries = 0;

        do
            n = pwrite(fd, buf, len, (off_t)off);
        while (n < 0 && errno == EINTR && ++retries < MAX_EINTR_RETRIES);
        if (n <= 0) {
            report_err("pwrite", n < 0 ? errno : EIO);
            close(fd);
            return 1;
        }
        off += (uint64_t)n;
    }
    start = (uint64_t)st.st_size - (uint64_t)st.st_size % MCGH_PAGE;
    for (tries = 0; tries < COLD_DROP_TRIES; tries++) {
        int err;

        if (fsync(fd) != 0) {
            report_err("fsync", errno);
            close(fd);
            return 1;
        }
        err = posix_fadvise(fd, (off_t)start, (off_t)(end - start),
                            POSIX_FADV_DONTNEED);
        if (err != 0) {
            report_err("posix_fadvise", err);
            close(fd);
            return 1;
        }
        left = cached_pages(fd, start, end);
        if (left == 0)
            break;
        usleep(10000);
    }
    if (left != 0)
        emit(2, "mcgh: --cold: %s: %lld pages of the cold part are still cached",
             wl->file, (long long)left);
    close(fd);
    return 0;
}

/* The simulator's access: --count accesses to pages of SIZE drawn as the
 * simulator draws them.  Anonymous: a private mapping of SIZE, one byte of
 * the page written per access.  --file: DATA_DIR/NAME extended to SIZE
 * (sparse with ftruncate; with --cold, data on disk that is not cached, see
 * access_extend_cold) and accessed with a pwrite() of the page (pread() with
 * --read-only).  --mmap: the file mapped shared, PROT_READ (and PROT_EXEC
 * with --exec), one byte of the page read per access.  Then hold, or unmap
 * and exit 0. */
static int run_access(const struct workload *wl)
{
    static char page[MCGH_PAGE];
    struct access_gen g;
    uint64_t npages = pages_of(wl->size), i, fsize, start;
    size_t len = (size_t)(npages * MCGH_PAGE);
    volatile char *mem = NULL;
    volatile char sink = 0;
    int fd = -1;

    if (wl->file == NULL) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            report_err("mmap", errno);
            return 1;
        }
        mem = p;
    } else {
        if (wl->cold && access_extend_cold(wl) != 0)
            return 1;
        fd = open_data_extended(wl->file, npages, &fsize);
        if (fd < 0)
            return 1;
        if (wl->map) {
            int prot = PROT_READ | (wl->map == 2 ? PROT_EXEC : 0);
            void *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED) {
                report_err("mmap", errno);
                return 1;
            }
            mem = p;
        }
    }
    access_gen_init(&g, wl);
    start = now_ns();
    for (i = 0; i < wl->count; i++) {
        uint64_t idx;

        /* --rate: ahead of the schedule, sleep until the access is due (at
         * least PACE_NS), as the simulator's access does. */
        if (wl->rate != 0) {
            uint64_t due = start + (uint64_t)((unsigned __int128)i * 1000000000u / wl->rate);
            uint64_t now = now_ns();

            if (now < due) {
                uint64_t ns = due - now < PACE_NS ? PACE_NS : due - now;
                struct timespec ts = { (time_t)(ns / 1000000000u),
                                       (long)(ns % 1000000000u) };
                nanosleep(&ts, NULL);
            }
        }
        idx = access_next(&g);
        off_t off = (off_t)(idx * MCGH_PAGE);
        ssize_t n;
        int retries = 0;

        if (mem != NULL && fd < 0) {
            mem[off] = (char)(i + 1);
            continue;
        }
        if (mem != NULL) {
            sink += mem[off];
            continue;
        }
        do
            n = wl->read_only ? pread(fd, page, sizeof(page), off)
                              : pwrite(fd, page, sizeof(page), off);
        while (n < 0 && errno == EINTR && ++retries < MAX_EINTR_RETRIES);
        if (n < 0) {
            report_err(wl->read_only ? "pread" : "pwrite", errno);
            return 1;
        }
    }
    (void)sink;
    if (wl->hold != NULL)
        hold_forever(wl->hold);     /* keeps the mapping and the file open */
    if (mem != NULL)
        munmap((void *)mem, len);
    if (fd >= 0)
        close(fd);
    return 0;
}

/* mcgh access-draws N ARGS...: the first N pages access ARGS would visit,
 * one per line, to check the port of the generators against the simulator. */
static int cmd_access_draws(int argc, char **argv)
{
    struct workload wl;
    struct access_gen g;
    uint64_t n, i;

    if (argc < 4 || parse_u64(argv[2], &n) != 0 || n > 100000000ULL)
        usage_exit("access-draws needs N (at most 100000000) and access ARGS", NULL);
    memset(&wl, 0, sizeof(wl));
    wl.kind = WL_ACCESS;
    parse_access(argc - 3, argv + 3, &wl);
    access_gen_init(&g, &wl);
    for (i = 0; i < n; i++)
        emit(1, "%llu", (unsigned long long)access_next(&g));
    return 0;
}

static int run_workload(const struct workload *wl)
{
    /* A stale NAME.ready from an earlier run must not announce this one. */
    if (wl->hold != NULL) {
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s.ready", MCGH_RUN_DIR,
                             wl->hold) < sizeof(path))
            (void)unlink(path);
    }
    switch (wl->kind) {
    case WL_ANON:
        return run_anon(wl);
    case WL_PAGECACHE:
        return run_pagecache(wl);
    case WL_MLOCK:
        return run_mlock(wl);
    case WL_DD:
        return run_dd(wl);
    case WL_CAT:
        return run_cat(wl);
    case WL_TAR:
        return run_tar(wl);
    case WL_DCACHE:
        return run_dcache(wl);
    case WL_THREADS:
        return run_threads(wl);
    case WL_ACCESS:
        return run_access(wl);
    case WL_SHMEM:
        return run_shmem(wl);
    }
    return EXIT_USAGE;
}

/* ------------------------------------------------------------------------ */
/* File operations whose errno is reported.                                  */
/* ------------------------------------------------------------------------ */

/* One write(2) of value to fd: 0 if every byte was written, EIO for a short
 * write, or the errno of the failed write. */
static int write_once(int fd, const char *value)
{
    size_t len = strlen(value);
    ssize_t n = write(fd, value, len);

    if (n < 0)
        return errno;
    if ((size_t)n != len)
        return EIO;
    return 0;
}

/* Open path O_WRONLY (no O_CREAT, no O_TRUNC) and write value in one call,
 * as "echo -n VALUE > PATH" would on a control file; 0 or an errno. */
static int write_path(const char *path, const char *value)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int err;

    if (fd < 0)
        return errno;
    err = write_once(fd, value);
    close(fd);
    return err;
}

/* mcgh write LINE PATH VALUE */
static int cmd_write(int argc, char **argv)
{
    if (argc != 5)
        usage_exit("write needs LINE PATH VALUE", NULL);
    check_lineno(argv[2]);
    emit_errno_line(argv[2], write_path(argv[3], argv[4]));
    return 0;
}

/* mcgh mkdir LINE PATH / mcgh rmdir LINE PATH: creating and removing a
 * cgroup directory. */
static int cmd_mkdir_rmdir(int argc, char **argv, int is_mkdir)
{
    int rc;

    if (argc != 4)
        usage_exit(is_mkdir ? "mkdir needs LINE PATH" : "rmdir needs LINE PATH",
                   NULL);
    check_lineno(argv[2]);
    rc = is_mkdir ? mkdir(argv[3], 0755) : rmdir(argv[3]);
    emit_errno_line(argv[2], rc == 0 ? 0 : errno);
    return 0;
}

/* mcgh mount LINE DIR new|remount OPTIONS: mount a tmpfs at DIR (made if
 * missing) with OPTIONS ("" or "size=...,huge=..."), or remount the one there. */
static int cmd_mount(int argc, char **argv)
{
    const char *dir, *opts;
    int remount, rc;

    if (argc != 6)
        usage_exit("mount needs LINE DIR new|remount OPTIONS", NULL);
    check_lineno(argv[2]);
    dir = argv[3];
    remount = strcmp(argv[4], "remount") == 0;
    if (!remount && strcmp(argv[4], "new") != 0)
        usage_exit("mount: new or remount", argv[4]);
    opts = argv[5][0] != '\0' ? argv[5] : NULL;
    if (remount) {
        rc = mount("tmpfs", dir, "tmpfs", MS_REMOUNT, opts);
    } else {
        char path[PATH_MAX];
        char *p;
        if ((size_t)snprintf(path, sizeof(path), "%s", dir) >= sizeof(path))
            usage_exit("mount: DIR too long", dir);
        for (p = path + 1; *p; p++) {
            if (*p == '/') {
                *p = '\0';
                (void)mkdir(path, 0755);
                *p = '/';
            }
        }
        (void)mkdir(path, 0755);
        rc = mount("tmpfs", dir, "tmpfs", 0, opts);
    }
    emit_errno_line(argv[2], rc == 0 ? 0 : errno);
    return 0;
}

/* mcgh umount LINE DIR / mcgh rm LINE FILE (a data-directory name or an
 * absolute tmpfs path). */
static int cmd_umount_rm(int argc, char **argv, int is_umount)
{
    char path[PATH_MAX];
    int rc;

    if (argc != 4)
        usage_exit(is_umount ? "umount needs LINE DIR" : "rm needs LINE FILE", NULL);
    check_lineno(argv[2]);
    if (is_umount) {
        rc = umount(argv[3]);
    } else {
        if (!valid_file_name(argv[3]) || data_path(path, sizeof(path), argv[3]) != 0)
            usage_exit("rm: bad FILE", argv[3]);
        rc = unlink(path);
    }
    emit_errno_line(argv[2], rc == 0 ? 0 : errno);
    return 0;
}

/* mcgh fdwrite LINE FD VALUE: a write to a file the shell keeps open (the
 * fd is inherited), e.g. after "exec 5<>memory.max". */
static int cmd_fdwrite(int argc, char **argv)
{
    int fd;

    if (argc != 5)
        usage_exit("fdwrite needs LINE FD VALUE", NULL);
    check_lineno(argv[2]);
    fd = parse_fd(argv[3]);
    emit_errno_line(argv[2], write_once(fd, argv[4]));
    return 0;
}

/* mcgh fdread FD: the whole content of an inherited fd, read with pread()
 * from offset 0 (a fresh snapshot of a seq_file such as memory.stat, not
 * affected by the shared file offset), copied raw to stdout. */
static int cmd_fdread(int argc, char **argv)
{
    static char buf[65536];
    char nb[32];
    uint64_t off = 0;
    int fd, retries = 0;

    if (argc != 3)
        usage_exit("fdread needs FD", NULL);
    fd = parse_fd(argv[2]);
    while (off < MAX_FDREAD_BYTES) {
        ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
        if (n < 0) {
            int err = errno;
            if (err == EINTR && ++retries < MAX_EINTR_RETRIES)
                continue;
            emit(1, "@@MCG READERR %s", errno_name(err, nb, sizeof(nb)));
            return 1;
        }
        if (n == 0)
            return 0;
        if (write_all(1, buf, (size_t)n) != 0)
            return 1;
        off += (uint64_t)n;
    }
    emit(1, "@@MCG READERR %s", errno_name(EFBIG, nb, sizeof(nb)));
    return 1;
}

/* mcgh open LINE PATH: can PATH be opened for reading and writing? */
static int cmd_open(int argc, char **argv)
{
    int fd;

    if (argc != 4)
        usage_exit("open needs LINE PATH", NULL);
    check_lineno(argv[2]);
    fd = open(argv[3], O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        emit_errno_line(argv[2], errno);
    } else {
        close(fd);
        emit_errno_line(argv[2], 0);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Joining a cgroup.                                                         */
/* ------------------------------------------------------------------------ */

/* A failed join: the script line's errno record when MCG_LINE names the
 * line (the model records the errno of a task that cannot start), else a
 * line-less note. */
static void enter_failed(int err)
{
    const char *line = getenv("MCG_LINE");
    char nb[32];

    if (line != NULL && line[0] != '\0' && strspn(line, "0123456789") == strlen(line))
        emit_errno_line(line, err);
    else
        emit(1, "@@MCG ENTERFAIL %s", errno_name(err, nb, sizeof(nb)));
}

/* mcgh enter CGDIR ADJ -- WORKLOAD...: move this very process into CGDIR,
 * set its oom_score_adj, then run the workload in-process, so that the task
 * that allocates is the task that joined (the shell would otherwise have to
 * move itself or rely on fork inheriting the cgroup). */
static int cmd_enter(int argc, char **argv)
{
    struct workload wl;
    char path[PATH_MAX], pid[32];
    int err;

    if (argc < 6 || strcmp(argv[4], "--") != 0)
        usage_exit("enter needs CGDIR ADJ -- COMMAND ARGS...", NULL);
    if (argv[3][0] == '\0')
        usage_exit("bad ADJ", argv[3]);
    /* Validate the workload before joining, so bad arguments move nothing. */
    if (parse_workload(argc - 5, argv + 5, &wl) != 0)
        usage_exit("enter: COMMAND must be anon, pagecache, mlock, dd, cat, readonce, tar, "
                   "dcache, threads or access", argv[5]);
    /* access --cold and cat --cold write their file and drop it from the
     * cache before the join, so the group is charged only for what the reads
     * bring in, as in the simulator, where the file was on disk before the
     * task ran. */
    if ((wl.kind == WL_ACCESS || wl.kind == WL_CAT) && wl.cold &&
        wl.file != NULL && access_extend_cold(&wl) != 0)
        return 1;
    /* access is judged by the group's page-fault counters, which count every
     * fault of the task once it has joined; the simulator's access faults
     * only on its region.  Populating the helper's own pages (text, data,
     * bss, stack) now, by mlockall() and munlockall() at once, leaves it no
     * faults of its own to take inside the group.  Best effort. */
    if (wl.kind == WL_ACCESS && mlockall(MCL_CURRENT) == 0)
        (void)munlockall();

    if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.procs", argv[2]) >=
        sizeof(path)) {
        err = ENAMETOOLONG;
    } else {
        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        err = write_path(path, pid);
    }
    if (err != 0) {
        report_err(path, err);
        enter_failed(err);
        return EXIT_ENTERFAIL;
    }
    if (strcmp(argv[3], "-") != 0) {
        err = write_path("/proc/self/oom_score_adj", argv[3]);
        if (err != 0) {
            report_err("/proc/self/oom_score_adj", err);
            enter_failed(err);
            return EXIT_ENTERFAIL;
        }
    }
    return run_workload(&wl);
}

/* ------------------------------------------------------------------------ */
/* Waiting for a held workload.                                              */
/* ------------------------------------------------------------------------ */

static uint64_t now_ms(void)
{
    return now_ns() / 1000000u;
}

/* Has process pid ended?  kill(pid, 0) still succeeds for a zombie (our
 * caller's child that the shell has not reaped yet), so a zombie or dead
 * state in /proc/PID/stat, or a task already exiting, also counts as gone. */
static int process_gone(pid_t pid)
{
    char path[64], buf[512];
    const char *rp;
    ssize_t n;
    int fd;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n == 0 || errno == ESRCH;
    buf[n] = '\0';
    /* "pid (comm) S ...": comm may contain ')' so use the last one. */
    rp = strrchr(buf, ')');
    if (rp == NULL || rp[1] != ' ')
        return 0;
    if (rp[2] == 'Z' || rp[2] == 'X' || rp[2] == 'x')
        return 1;
    /* A task in do_exit() (PF_EXITING, 0x4, in the flags field, the sixth
     * after the state) has left its cgroup already: it is ending. */
    {
        const char *f = rp + 2;
        unsigned long long flags;
        int i;

        for (i = 0; i < 6 && f != NULL; i++) {
            f = strchr(f, ' ');
            if (f != NULL)
                f++;
        }
        if (f != NULL && sscanf(f, "%llu", &flags) == 1 && (flags & 0x4u))
            return 1;
    }
    return 0;
}

/* mcgh waitready NAME PID TIMEOUT_MS: every 10 ms, check for NAME.ready
 * (READY), then for the end of PID (GONE); TIMEOUT after TIMEOUT_MS.
 * A process that became ready and then died is reported GONE. */
static int cmd_waitready(int argc, char **argv)
{
    char path[PATH_MAX];
    unsigned long pidv, timeout;
    uint64_t deadline;
    unsigned long iter, max_iter;
    const char *name;
    pid_t pid;

    if (argc != 5)
        usage_exit("waitready needs NAME PID TIMEOUT_MS", NULL);
    name = argv[2];
    if (!valid_name(name))
        usage_exit("bad NAME", name);
    if (parse_uint(argv[3], INT_MAX, &pidv) != 0 || pidv == 0)
        usage_exit("bad PID", argv[3]);
    if (parse_uint(argv[4], MAX_TIMEOUT_MS, &timeout) != 0)
        usage_exit("bad TIMEOUT_MS", argv[4]);
    pid = (pid_t)pidv;
    snprintf(path, sizeof(path), "%s/%s.ready", MCGH_RUN_DIR, name);

    deadline = now_ms() + timeout;
    /* The clock bounds the loop; the iteration cap is a second guard. */
    max_iter = timeout / 10 * 4 + 1000;
    for (iter = 0; iter < max_iter; iter++) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };

        /* An ended task is reported as ended even if it was ready first,
         * as the model's `wait` does: its end is what the script sees. */
        if (process_gone(pid)) {
            emit(1, "@@MCG GONE %s", name);
            return 0;
        }
        if (access(path, F_OK) == 0) {
            emit(1, "@@MCG READY %s", name);
            return 0;
        }
        if (now_ms() >= deadline)
            break;
        nanosleep(&ts, NULL);
    }
    emit(1, "@@MCG TIMEOUT %s", name);
    return 0;
}


/* SIGKILL every process whose parent is this one; the number signalled. */
static int kill_children(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t me = getpid();
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[64], buf[512];
        char *close_paren;
        long pid, ppid;
        ssize_t got;
        int fd;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid = strtol(e->d_name, NULL, 10);
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        got = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (got <= 0)
            continue;
        buf[got] = 0;
        /* pid (comm) state ppid ...: comm may hold spaces and parentheses. */
        close_paren = strrchr(buf, ')');
        if (!close_paren || sscanf(close_paren + 1, " %*c %ld", &ppid) != 1)
            continue;
        if (ppid == me && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* session SCRIPT: run `sh SCRIPT` as a child, this process being the
 * subreaper of everything the script starts (orphans are re-parented here,
 * not to init). When the shell exits, every remaining descendant is
 * SIGKILLed and reaped, children first and then their re-parented
 * children, until none is left: no task of one script outlives it, not even
 * as a zombie. Exits with the shell's status (128+N if killed by signal N). */
static int cmd_session(int argc, char **argv)
{
    pid_t sh;
    int status = 0, rc;

    if (argc != 3)
        usage_exit("session needs SCRIPT", NULL);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        report_err("prctl(PR_SET_CHILD_SUBREAPER)", errno);
        return 125;
    }
    sh = fork();
    if (sh < 0) {
        report_err("fork", errno);
        return 125;
    }
    if (sh == 0) {
        execl("/bin/sh", "sh", argv[2], (char *)NULL);
        _exit(127);
    }
    while (waitpid(sh, &status, 0) < 0) {
        if (errno != EINTR) {
            report_err("waitpid", errno);
            break;
        }
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    for (;;) {
        kill_children();
        if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
            break;
    }
    return rc;
}

/* mcgh poll LINE FD TIMEOUT_MS: poll() an inherited pressure fd for POLLPRI,
 * as an agent waits on its PSI trigger, and record what came first:
 * POLLERR (no trigger on the fd, or its cgroup is gone: the kernel sets
 * POLLPRI with it) as error, POLLPRI as event, else the timeout.  A signal
 * restarts the wait for what is left of the timeout. */
static int cmd_poll(int argc, char **argv)
{
    struct pollfd p;
    uint64_t ms, deadline;
    const char *what;
    char nb[32];
    int fd, n, retries = 0;

    if (argc != 5)
        usage_exit("poll needs LINE FD TIMEOUT_MS", NULL);
    check_lineno(argv[2]);
    fd = parse_fd(argv[3]);
    if (parse_u64(argv[4], &ms) != 0 || ms > MAX_POLL_MS)
        usage_exit("bad TIMEOUT_MS", argv[4]);
    deadline = now_ms() + ms;
    for (;;) {
        uint64_t now = now_ms();

        p.fd = fd;
        p.events = POLLPRI;
        p.revents = 0;
        n = poll(&p, 1, now >= deadline ? 0 : (int)(deadline - now));
        if (n < 0 && errno == EINTR && ++retries < MAX_EINTR_RETRIES)
            continue;
        break;
    }
    if (n < 0) {
        emit(1, "@@MCG L%s POLLFAIL %s", argv[2], errno_name(errno, nb, sizeof(nb)));
        return 1;
    }
    if (p.revents & (POLLERR | POLLNVAL))
        what = "error";
    else if (p.revents & POLLPRI)
        what = "event";
    else
        what = "timeout";
    emit(1, "@@MCG L%s POLL %s", argv[2], what);
    return 0;
}

/* mcgh size SIZE: print the byte count a SIZE argument stands for
 * ("@@MCG SIZE <bytes>"), to check the parser. */
static int cmd_size(int argc, char **argv)
{
    uint64_t v;

    if (argc != 3)
        usage_exit("size needs SIZE", NULL);
    if (parse_size(argv[2], &v) != 0)
        usage_exit("bad size", argv[2]);
    emit(1, "@@MCG SIZE %llu", (unsigned long long)v);
    return 0;
}

int main(int argc, char **argv)
{
    struct workload wl;
    const char *cmd;

    if (argc < 2)
        usage_exit(NULL, NULL);
    cmd = argv[1];

    if (parse_workload(argc - 1, argv + 1, &wl) == 0)
        return run_workload(&wl);
    if (strcmp(cmd, "enter") == 0)
        return cmd_enter(argc, argv);
    if (strcmp(cmd, "write") == 0)
        return cmd_write(argc, argv);
    if (strcmp(cmd, "mkdir") == 0)
        return cmd_mkdir_rmdir(argc, argv, 1);
    if (strcmp(cmd, "rmdir") == 0)
        return cmd_mkdir_rmdir(argc, argv, 0);
    if (strcmp(cmd, "fdwrite") == 0)
        return cmd_fdwrite(argc, argv);
    if (strcmp(cmd, "mount") == 0)
        return cmd_mount(argc, argv);
    if (strcmp(cmd, "umount") == 0)
        return cmd_umount_rm(argc, argv, 1);
    if (strcmp(cmd, "rm") == 0)
        return cmd_umount_rm(argc, argv, 0);
    if (strcmp(cmd, "fdread") == 0)
        return cmd_fdread(argc, argv);
    if (strcmp(cmd, "open") == 0)
        return cmd_open(argc, argv);
    if (strcmp(cmd, "waitready") == 0)
        return cmd_waitready(argc, argv);
    if (strcmp(cmd, "size") == 0)
        return cmd_size(argc, argv);
    if (strcmp(cmd, "poll") == 0)
        return cmd_poll(argc, argv);
    if (strcmp(cmd, "session") == 0)
        return cmd_session(argc, argv);
    if (strcmp(cmd, "access-draws") == 0)
        return cmd_access_draws(argc, argv);
    usage_exit("unknown command", cmd);
}
