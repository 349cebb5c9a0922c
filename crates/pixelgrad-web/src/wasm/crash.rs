//! What a crash of this instance tells JavaScript before it happens.
//!
//! The wasm build aborts on panic: the panic hook runs, then the instance traps
//! (`WebAssembly.RuntimeError: unreachable`) and its memory may be half-updated, so it must not
//! be used again. The hook installed here hands the panic message (payload and location) to
//! the handler `web/js/instance.js` registers for this instance ([`set_panic_handler`]) — at
//! once, synchronously, before the trap — so the JS runtime discards the instance even when
//! the panic happens inside an asynchronous call whose promise would otherwise never settle,
//! and reports the message in the `PixelgradError` of kind `panic`.
//!
//! `__testPanic` / `__testPanicAsync` exist only so tests can prove that (web/tests/crash.test.mjs);
//! they are compiled into every build because the tests run the shipped package. A page can
//! only crash its own instance with them, which the runtime then replaces.

use std::cell::RefCell;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

thread_local! {
    static HANDLER: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers `f(message)`, called once per panic before the instance traps.
#[wasm_bindgen(js_name = setPanicHandler)]
pub fn set_panic_handler(f: Function) {
    HANDLER.with(|h| *h.borrow_mut() = Some(f));
}

/// Installs the panic hook (from the module's start function).
pub(crate) fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        // one line: the panic's message, then where it happened
        let what = info.payload_as_str().unwrap_or("a panic without a message");
        let msg = match info.location() {
            Some(l) => format!("{what} (at {}:{}:{})", l.file(), l.line(), l.column()),
            None => what.to_string(),
        };
        web_sys::console::error_1(&format!("pixelgrad: internal error (please report): {msg}").into());
        // `try_with`/`try_borrow`: a panic while the handler is being registered (or during
        // thread-local teardown) must not panic again inside the hook.
        let f = HANDLER.try_with(|h| h.try_borrow().ok().and_then(|f| f.clone())).ok().flatten();
        if let Some(f) = f {
            // Whatever the handler throws, the instance traps right after; nothing to report.
            let _ = f.call1(&JsValue::NULL, &JsValue::from_str(&msg));
        }
    }));
}

/// Test hook: panics with `message` (the instance traps). Not part of the API.
#[wasm_bindgen(js_name = __testPanic)]
pub fn test_panic(message: &str) {
    panic!("{message}");
}

/// Test hook: a promise whose asynchronous part panics with `message`, after one turn of the
/// event loop, as a panic inside `onnx.run` or a read-back would. Not part of the API.
#[wasm_bindgen(js_name = __testPanicAsync)]
pub fn test_panic_async(message: String) -> Promise {
    wasm_bindgen_futures::future_to_promise(panic_later(message))
}

async fn panic_later(message: String) -> Result<JsValue, JsValue> {
    wasm_bindgen_futures::JsFuture::from(Promise::resolve(&JsValue::NULL)).await?;
    panic!("{message}");
}
