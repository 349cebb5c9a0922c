//! Errors crossing the wasm boundary as `PixelgradError`s: a JavaScript `Error` with the
//! engine's message unchanged plus the typed fields of [`pixelgrad::Error`] (`kind`, `op`,
//! `shapes`, `backend`), so callers branch on data, not on message text.
//!
//! The class itself is defined in `web/js/errors.js` (a subclass of `Error`); the package
//! registers its prototype once after loading the module ([`set_error_class`]), and every error
//! made here gets it, so `e instanceof pg.PixelgradError` holds for errors thrown by Rust.

use std::cell::RefCell;
use std::fmt::Display;

use js_sys::{Array, Object, Reflect};
use pixelgrad::Error;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

thread_local! {
    static PROTO: RefCell<Option<Object>> = const { RefCell::new(None) };
}

/// Registers `PixelgradError.prototype` (called by `web/js/runtime.js` after loading).
#[wasm_bindgen(js_name = setErrorClass)]
pub fn set_error_class(prototype: Object) {
    PROTO.with(|p| *p.borrow_mut() = Some(prototype));
}

/// `kind`, `op`, `shapes` and `backend` of an engine error (empty where it has none).
fn fields(e: &Error) -> (&'static str, String, Vec<Vec<usize>>, String) {
    match e {
        Error::Shape { op, shapes, backend, .. } => ("shape", op.to_string(), shapes.clone(), backend.clone()),
        Error::Backend { op, backend, .. } => ("backend", op.to_string(), Vec::new(), backend.clone()),
        Error::Limit { op, backend, .. } => ("limit", op.to_string(), Vec::new(), backend.clone()),
        Error::Unavailable { backend, .. } => ("unavailable", String::new(), Vec::new(), backend.clone()),
        Error::DeviceLost { backend, .. } => ("deviceLost", String::new(), Vec::new(), backend.clone()),
        Error::WouldBlock { op, backend, .. } => ("wouldBlock", op.to_string(), Vec::new(), backend.clone()),
        Error::BackendMismatch { op, a, b } => ("backendMismatch", op.to_string(), Vec::new(), format!("{a}, {b}")),
        Error::Autodiff(_) => ("autodiff", "backward".into(), Vec::new(), String::new()),
        Error::Invalid { what, .. } => ("invalid", what.clone(), Vec::new(), String::new()),
        Error::Io { .. } => ("io", String::new(), Vec::new(), String::new()),
        Error::Budget { op, backend, .. } => ("budget", op.to_string(), Vec::new(), backend.clone()),
        Error::Cancelled { op } => ("cancelled", op.clone(), Vec::new(), String::new()),
    }
}

/// The op a plain message names: the text before its first `: ` (`"sequential: bad config"`).
fn op_of(msg: &str) -> String {
    match msg.split_once(": ") {
        Some((op, _)) if !op.is_empty() && op.len() <= 40 && !op.contains(' ') => op.to_string(),
        _ => String::new(),
    }
}

/// A pixelgrad error as a `PixelgradError` (a JavaScript `Error`) with the engine's message.
pub(crate) fn js_err<E: Display + 'static>(e: E) -> JsValue {
    let msg = e.to_string();
    let any: &dyn std::any::Any = &e;
    // An ONNX error that wraps an engine error (a node's shapes, a budget, a cancelled run)
    // carries that error's fields; the message stays the ONNX one, which names the node.
    let core = any.downcast_ref::<Error>().or_else(|| match any.downcast_ref::<pixelgrad::onnx::OnnxError>() {
        Some(pixelgrad::onnx::OnnxError::Engine { source, .. }) | Some(pixelgrad::onnx::OnnxError::Core(source)) => Some(source),
        _ => None,
    });
    let (kind, op, shapes, backend) = match core {
        Some(core) => fields(core),
        None => ("invalid", op_of(&msg), Vec::new(), String::new()),
    };
    let err = js_sys::Error::new(&msg);
    let obj: &Object = err.unchecked_ref();
    PROTO.with(|p| {
        if let Some(proto) = p.borrow().as_ref() {
            Object::set_prototype_of(obj, proto);
        }
    });
    let js_shapes = Array::new();
    for s in &shapes {
        js_shapes.push(&s.iter().map(|&d| JsValue::from(d as f64)).collect::<Array>());
    }
    // Reflect::set on a fresh ordinary object cannot fail; ignoring its result keeps this total.
    let _ = Reflect::set(obj, &"kind".into(), &kind.into());
    let _ = Reflect::set(obj, &"op".into(), &op.into());
    let _ = Reflect::set(obj, &"shapes".into(), &js_shapes);
    let _ = Reflect::set(obj, &"backend".into(), &backend.into());
    err.into()
}
