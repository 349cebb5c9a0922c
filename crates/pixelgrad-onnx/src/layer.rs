//! [`OnnxLayer`]: an imported graph (or its part up to a named value) as a
//! [`pixelgrad_nn::Module`], so it can sit in a `Sequential` in front of new layers and be
//! trained with `fit`, whole or frozen.

use std::rc::Rc;

use pixelgrad_core::{Error, Param, Result as CoreResult, Tensor};
use pixelgrad_nn::{Mode, Module};

use crate::{Input, Model, OnnxError, Result, Session};

/// One input and one output of an imported graph as a layer. Its parameters are the model's
/// weights, named by their ONNX tensor names. Images arrive as `[N, C, H, W]` (the engine's
/// layout); a graph whose input is declared `[N, H, W, C]` gets them permuted to that. The graph always runs with inference semantics
/// (batch norms folded, dropout off); `Mode` does not change it.
pub struct OnnxLayer {
    session: Session,
    input: String,
    output: String,
    /// The input is declared `[N, H, W, C]` (a Keras / TF export, pixelgrad's own): images,
    /// which reach the layer as `[N, C, H, W]`, are permuted to it first.
    nhwc: bool,
}

/// True if a declared input shape reads as `[N, H, W, C]`: rank 4, the last size a channel
/// count (1, 3 or 4) and the second not.
fn declared_nhwc(shape: Option<&[crate::Dim]>) -> bool {
    let ch = |d: &crate::Dim| matches!(d, crate::Dim::Fixed(1 | 3 | 4));
    matches!(shape, Some(s) if s.len() == 4 && ch(&s[3]) && !ch(&s[1]))
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
            None if inputs.len() == 1 => inputs.first().map(|i| i.name.clone()).unwrap_or_default(),
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
        let nhwc = declared_nhwc(inputs.iter().find(|i| i.name == input).and_then(|i| i.shape.as_deref()));
        Ok(OnnxLayer { session, input, output, nhwc })
    }

    /// Loads `model` on the session's device as a layer ([`OnnxLayer::new`]).
    pub fn from_model(model: Rc<Model>, dev: &pixelgrad_core::Device, input: Option<&str>, output: Option<&str>) -> Result<OnnxLayer> {
        OnnxLayer::new(Session::from_rc(model, dev)?, input, output)
    }

    pub fn session(&self) -> &Session {
        &self.session
    }
    /// True if the graph's input is declared `[N, H, W, C]`: the layer permutes the
    /// `[N, C, H, W]` images it gets to that layout before running the graph.
    pub fn nhwc(&self) -> bool {
        self.nhwc
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
        let x = if self.nhwc && x.rank() == 4 { x.permute(&[0, 2, 3, 1])? } else { x.clone() };
        let out = self.session.run_to(&[(self.input.as_str(), Input::Tensor(x))], &[self.output.as_str()]).map_err(Error::from)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{
        data_type as dt, DimValue, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto,
    };
    use crate::proto::{TypeProtoTensor, ValueInfoProto};
    use prost::Message;

    fn relu_model(dims: &[i64]) -> Model {
        let info = |name: &str| {
            let dim = dims.iter().map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() }).collect();
            let tensor = TypeProtoTensor { elem_type: dt::FLOAT, shape: Some(TensorShapeProto { dim }) };
            ValueInfoProto {
                name: name.into(),
                r#type: Some(TypeProto { tensor_type: Some(tensor), ..Default::default() }),
                ..Default::default()
            }
        };
        let relu = NodeProto {
            input: vec!["x".into()],
            output: vec!["y".into()],
            name: "relu".into(),
            op_type: "Relu".into(),
            ..Default::default()
        };
        let graph =
            GraphProto { node: vec![relu], name: "g".into(), input: vec![info("x")], output: vec![info("y")], ..Default::default() };
        let m = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
            graph: Some(graph),
            ..Default::default()
        };
        Model::from_bytes(&m.encode_to_vec()).unwrap()
    }

    /// An NHWC-declared graph gets the layer's NCHW images permuted; an NCHW one as they are.
    #[test]
    fn nhwc_graphs_get_images_permuted() {
        let dev = pixelgrad_core::Device::new(pixelgrad_cpu::CpuBackend::new());
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let img = Tensor::from_vec(&dev, &x, [1, 3, 2, 2]).unwrap();
        let nhwc = OnnxLayer::new(Session::new(relu_model(&[1, 2, 2, 3]), &dev).unwrap(), None, None).unwrap();
        assert!(nhwc.nhwc());
        let y = nhwc.forward(&img, Mode::Eval).unwrap();
        assert_eq!(y.dims(), &[1, 2, 2, 3]);
        assert_eq!(y.to_vec().unwrap(), img.permute(&[0, 2, 3, 1]).unwrap().to_vec().unwrap());
        let nchw = OnnxLayer::new(Session::new(relu_model(&[1, 3, 2, 2]), &dev).unwrap(), None, None).unwrap();
        assert!(!nchw.nhwc());
        assert_eq!(nchw.forward(&img, Mode::Eval).unwrap().to_vec().unwrap(), x);
    }
}
