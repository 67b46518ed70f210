//! Error numbers returned by control-file writes and other system-call-like operations,
//! with the names and strerror texts of Linux/glibc.

use std::fmt;

/// A Linux errno, as a control-file write or a cgroupfs operation would return it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Errno {
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    E2BIG,
    EBADF,
    EAGAIN,
    ENOMEM,
    EACCES,
    EBUSY,
    EEXIST,
    ENOTDIR,
    EISDIR,
    EINVAL,
    ENOSPC,
    ENOTEMPTY,
    EOPNOTSUPP,
    ENODEV,
    ERANGE,
    ENAMETOOLONG,
}

impl Errno {
    /// The symbolic name, e.g. "EBUSY".
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EINTR => "EINTR",
            Errno::E2BIG => "E2BIG",
            Errno::EBADF => "EBADF",
            Errno::EAGAIN => "EAGAIN",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::ENOTDIR => "ENOTDIR",
            Errno::EISDIR => "EISDIR",
            Errno::EINVAL => "EINVAL",
            Errno::ENOSPC => "ENOSPC",
            Errno::ENOTEMPTY => "ENOTEMPTY",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::ENODEV => "ENODEV",
            Errno::ERANGE => "ERANGE",
            Errno::ENAMETOOLONG => "ENAMETOOLONG",
        }
    }

    /// The number Linux gives it (asm-generic/errno-base.h and errno.h), as an OSError
    /// raised for it carries.
    pub fn code(self) -> i32 {
        match self {
            Errno::EPERM => 1,
            Errno::ENOENT => 2,
            Errno::ESRCH => 3,
            Errno::EINTR => 4,
            Errno::E2BIG => 7,
            Errno::EBADF => 9,
            Errno::EAGAIN => 11,
            Errno::ENOMEM => 12,
            Errno::EACCES => 13,
            Errno::EBUSY => 16,
            Errno::EEXIST => 17,
            Errno::ENODEV => 19,
            Errno::ENOTDIR => 20,
            Errno::EISDIR => 21,
            Errno::EINVAL => 22,
            Errno::ENOSPC => 28,
            Errno::ERANGE => 34,
            Errno::ENAMETOOLONG => 36,
            Errno::ENOTEMPTY => 39,
            Errno::EOPNOTSUPP => 95,
        }
    }

    /// The glibc strerror() text, as bash prints it after "write error: ".
    pub fn message(self) -> &'static str {
        match self {
            Errno::EPERM => "Operation not permitted",
            Errno::ENOENT => "No such file or directory",
            Errno::ESRCH => "No such process",
            Errno::EINTR => "Interrupted system call",
            Errno::E2BIG => "Argument list too long",
            Errno::EBADF => "Bad file descriptor",
            Errno::EAGAIN => "Resource temporarily unavailable",
            Errno::ENOMEM => "Cannot allocate memory",
            Errno::EACCES => "Permission denied",
            Errno::EBUSY => "Device or resource busy",
            Errno::EEXIST => "File exists",
            Errno::ENOTDIR => "Not a directory",
            Errno::EISDIR => "Is a directory",
            Errno::EINVAL => "Invalid argument",
            Errno::ENOSPC => "No space left on device",
            Errno::ENOTEMPTY => "Directory not empty",
            Errno::EOPNOTSUPP => "Operation not supported",
            Errno::ENODEV => "No such device",
            Errno::ERANGE => "Numerical result out of range",
            Errno::ENAMETOOLONG => "File name too long",
        }
    }

    /// Parse a symbolic name ("EBUSY"); used by scripts that assert an errno.
    pub fn from_name(s: &str) -> Option<Errno> {
        const ALL: [Errno; 20] = [
            Errno::EPERM,
            Errno::ENOENT,
            Errno::ESRCH,
            Errno::EINTR,
            Errno::E2BIG,
            Errno::EBADF,
            Errno::EAGAIN,
            Errno::ENOMEM,
            Errno::EACCES,
            Errno::EBUSY,
            Errno::EEXIST,
            Errno::ENOTDIR,
            Errno::EISDIR,
            Errno::EINVAL,
            Errno::ENOSPC,
            Errno::ENOTEMPTY,
            Errno::EOPNOTSUPP,
            Errno::ENODEV,
            Errno::ERANGE,
            Errno::ENAMETOOLONG,
        ];
        ALL.into_iter().find(|e| e.name() == s)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Errno {}
