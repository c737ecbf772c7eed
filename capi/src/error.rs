//! Status codes, the thread-local last-error message, and the guard every entry
//! point runs its body in.

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a `pica_*` function returns. `PICA_STATUS_OK` is 0; every other value is an
/// error whose message `pica_last_error()` returns on the same thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaStatus {
    /// Success.
    Ok = 0,
    /// A required pointer argument was null.
    NullArgument = 1,
    /// A handle of the wrong type, or one already freed (when detectable).
    InvalidHandle = 2,
    /// An argument is out of range (register index, DVLE index, enum value,
    /// misaligned buffer).
    InvalidArgument = 3,
    /// The SHBIN bytes could not be parsed.
    Parse = 4,
    /// The shader cannot be prepared (engine unavailable, entry point outside
    /// the program, native compilation failed).
    Engine = 5,
    /// A Rust panic was caught at the boundary (a bug in pica-jit).
    Panic = 6,
}

/// An error on its way to the C caller.
pub(crate) struct Failure {
    pub status: PicaStatus,
    pub message: String,
}

impl Failure {
    pub fn new(status: PicaStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub fn null(what: &str) -> Failure {
        Failure::new(PicaStatus::NullArgument, format!("`{what}` is null"))
    }

    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(PicaStatus::InvalidArgument, message)
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // Interior NULs cannot occur in our messages, but never fail here.
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = text);
}

/// Runs an entry point's body: catches every panic (none may cross into C),
/// records the message of a failure for `pica_last_error`, and turns the
/// outcome into a status code. A successful call leaves the last message alone.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> PicaStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => PicaStatus::Ok,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            set_last_error(&format!("internal error (panic) in pica-jit: {what}"));
            PicaStatus::Panic
        }
    }
}

/// The message of the last failed call on this thread, as a NUL-terminated
/// UTF-8 string ("" when no call failed yet). The pointer stays valid until the
/// next failing `pica_*` call on this thread; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn pica_last_error() -> *const c_char {
    catch_unwind(|| LAST_ERROR.with(|last| last.borrow().as_ptr())).unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: pica_last_error returns a valid NUL-terminated string.
        unsafe { CStr::from_ptr(pica_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn panics_become_a_status_and_a_message() {
        let status = guard(|| panic!("boom {}", 7));
        assert_eq!(status, PicaStatus::Panic);
        assert_eq!(last(), "internal error (panic) in pica-jit: boom 7");
        let status = guard(|| std::panic::panic_any(42u8));
        assert_eq!(status, PicaStatus::Panic);
        assert_eq!(last(), "internal error (panic) in pica-jit: (no message)");
    }

    #[test]
    fn failures_set_the_message_and_successes_keep_it() {
        assert_eq!(
            guard(|| Err(Failure::invalid("bad\0value"))),
            PicaStatus::InvalidArgument
        );
        assert_eq!(
            last(),
            "bad value",
            "interior NULs cannot truncate the message"
        );
        assert_eq!(guard(|| Ok(())), PicaStatus::Ok);
        assert_eq!(last(), "bad value");
    }

    #[test]
    fn messages_are_per_thread() {
        assert_eq!(
            guard(|| Err(Failure::null("here"))),
            PicaStatus::NullArgument
        );
        std::thread::spawn(|| {
            assert_eq!(last(), "", "a new thread has no message");
            assert_eq!(
                guard(|| Err(Failure::null("there"))),
                PicaStatus::NullArgument
            );
        })
        .join()
        .unwrap();
        assert_eq!(last(), "`here` is null");
    }
}
