//! [`OnnxLayer`]: an imported graph (or its part up to a named value) as a
//! [`pixelgrad_nn::Module`], so it can sit in a `Sequential` in front of new layers and be
//! trained with `fit`, whole or frozen.

use std::rc::Rc;

use pixelgrad_core::{Error, Param, Result as CoreResult, Tensor};
use pixelgrad_nn::{Mode, Module};

use crate::{Input, Model, OnnxError, Result, Session};

/// One input and one output of an imported graph as a layer. Its parameters are the model's
/// weights, named by their ONNX tensor names. The graph always runs with inference semantics
/// (batch norms folded, dropout off); `Mode` does not change it.
pub struct OnnxLayer {
    session: Session,
    input: String,
    output: String,
}

impl OnnxLayer {
    /// `input`: the graph input fed by the layer's input (default: the only one); `output`:
    /// any value of the graph (default: the first graph output), e.g. the features before a
    /// classifier head.
    pub fn new(session: Session, input: Option<&str>, output: Option<&str>) -> Result<OnnxLayer> {
        let inputs = session.inputs();
        let input = match input {
            Some(n) => inputs
                .iter()
                .find(|i| i.name == n)
                .ok_or_else(|| OnnxError::Input { name: n.into(), msg: "the model has no such input".into() })?
                .name
                .clone(),
            None if inputs.len() == 1 => inputs[0].name.clone(),
            None => {
                return Err(OnnxError::Input {
                    name: String::new(),
                    msg: format!("the model has {} inputs; name the one the layer feeds", inputs.len()),
                })
            }
        };
        let output = match output {
            Some(o) => {
                let known = session.model().value_names().contains(&o) || session.outputs().iter().any(|v| v.name == o);
                if !known {
                    return Err(OnnxError::Output { name: o.into(), msg: "the graph has no such value".into() });
                }
                o.to_string()
            }
            None => session
                .outputs()
                .first()
                .ok_or_else(|| OnnxError::Output { name: String::new(), msg: "the model has no outputs".into() })?
                .name
                .clone(),
        };
        Ok(OnnxLayer { session, input, output })
    }

    /// Loads `model` on the session's device as a layer ([`OnnxLayer::new`]).
    pub fn from_model(model: Rc<Model>, dev: &pixelgrad_core::Device, input: Option<&str>, output: Option<&str>) -> Result<OnnxLayer> {
        OnnxLayer::new(Session::from_rc(model, dev)?, input, output)
    }

    pub fn session(&self) -> &Session {
        &self.session
    }
    pub fn input_name(&self) -> &str {
        &self.input
    }
    pub fn output_name(&self) -> &str {
        &self.output
    }
}

impl Module for OnnxLayer {
    fn forward(&self, x: &Tensor, _mode: Mode) -> CoreResult<Tensor> {
        let out = self.session.run_to(&[(self.input.as_str(), Input::Tensor(x.clone()))], &[self.output.as_str()]).map_err(Error::from)?;
        let v = out.into_iter().next().ok_or_else(|| Error::invalid("onnx layer", "no output"))?;
        if !v.dtype().is_float() {
            return Err(Error::invalid("onnx layer", format!("value '{}' has element type {}, not float", self.output, v.dtype())));
        }
        v.tensor(self.session.device()).map_err(Error::from)
    }
    fn visit_params(&self, f: &mut dyn FnMut(&str, &Param)) {
        for (name, p) in self.session.params() {
            f(name, p);
        }
    }
    fn describe(&self) -> String {
        let m = self.session.model();
        format!("Onnx({} nodes, opset {}, '{}' -> '{}')", m.nodes.len(), m.opset, self.input, self.output)
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}
