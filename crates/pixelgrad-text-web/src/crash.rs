//! What a panic of this instance tells JavaScript before the instance traps.
//!
//! The wasm build aborts on panic (`WebAssembly.RuntimeError: unreachable`) and the instance's
//! memory may be half-updated, so `web/js/textmodule.js` never calls it again and makes the next
//! tokenizer on a fresh instance. The hook hands the panic message and location to the handler
//! the JS side registered ([`set_panic_handler`]) so the error it throws can carry them.
//!
//! `__testPanic` exists only so web/tests/tokenizer.test.mjs can prove the recovery on the
//! shipped module; a page can only crash its own text instance with it.

use std::cell::RefCell;

use js_sys::Function;
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
        let what = info.payload_as_str().unwrap_or("a panic without a message");
        let msg = match info.location() {
            Some(l) => format!("{what} (at {}:{}:{})", l.file(), l.line(), l.column()),
            None => what.to_string(),
        };
        // `try_with`/`try_borrow`: a panic while the handler is being registered must not panic
        // again inside the hook.
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
