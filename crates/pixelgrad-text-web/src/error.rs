//! pixelgrad-text's errors as `PixelgradError`s: a JavaScript `Error` with the message
//! unchanged, kind `invalid` and the op the message starts with (`tokenizer`,
//! `tokenizer.encode`, `tokenizer.decode`), with the prototype `web/js/textmodule.js` registers
//! ([`set_error_class`]), as the main module's errors have.

use std::cell::RefCell;
use std::fmt::Display;

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    static PROTO: RefCell<Option<Object>> = const { RefCell::new(None) };
}

/// Registers `PixelgradError.prototype` (called once per instance after loading it).
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(prototype: Object) {
    PROTO.with(|p| *p.borrow_mut() = Some(prototype));
}

/// The op a message names: the text before its first `: `.
fn op_of(msg: &str) -> &str {
    match msg.split_once(": ") {
        Some((op, _)) if !op.is_empty() && op.len() <= 40 && !op.contains(' ') => op,
        _ => "",
    }
}

/// `e` as a `PixelgradError` of kind `invalid`.
pub(crate) fn js_err<E: Display>(e: E) -> JsValue {
    let msg = e.to_string();
    let err = js_sys::Error::new(&msg);
    let obj: &Object = err.unchecked_ref();
    PROTO.with(|p| {
        if let Some(proto) = p.borrow().as_ref() {
            Object::set_prototype_of(obj, proto);
        }
    });
    // Reflect::set on a fresh ordinary object cannot fail; ignoring its result keeps this total.
    let _ = Reflect::set(obj, &"kind".into(), &"invalid".into());
    let _ = Reflect::set(obj, &"op".into(), &op_of(&msg).into());
    let _ = Reflect::set(obj, &"shapes".into(), &Array::new());
    let _ = Reflect::set(obj, &"backend".into(), &"".into());
    err.into()
}
