//! The host's `tracing` spans in the trace: a [`tracing_subscriber::Layer`] that records
//! each time a span is entered and left as one event. Part of the traces (layer 1).

use super::{live, Recorder};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use web_time::Instant;

/// A `tracing` layer that adds every span, from entry to exit, to the trace of every
/// runtime of the process that traces (category `span`, on the thread that entered it,
/// with the span's fields as args). Install it once, before or after the runtimes are
/// built; while no runtime traces it records nothing.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// let dir = std::env::temp_dir().join(format!("forge-doc-spans-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("trace.json");
/// let subscriber = tracing_subscriber::registry().with(forge_core::trace::SpanLayer::new());
/// tracing::subscriber::with_default(subscriber, || {
///     let mut rt = forge_core::ForgeRuntime::builder().trace(&path).build().unwrap();
///     tracing::info_span!("load_weights", layer = 3).in_scope(|| {});
///     rt.flush_trace().unwrap();
/// });
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.contains("load_weights"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SpanLayer {
    _private: (),
}

impl SpanLayer {
    /// The layer; see the [type docs](SpanLayer).
    pub fn new() -> SpanLayer {
        SpanLayer::default()
    }
}

/// A span's fields, as the event's args.
struct Fields(serde_json::Map<String, serde_json::Value>);

/// When each current entry of a span began (a span may be entered again before it is left).
struct Entries(Vec<Instant>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut fields = Fields(serde_json::Map::new());
        attrs.record(&mut fields);
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        if let Some(fields) = ext.get_mut::<Fields>() {
            values.record(fields);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        match ext.get_mut::<Entries>() {
            Some(entries) => entries.0.push(Instant::now()),
            None => ext.insert(Entries(vec![Instant::now()])),
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        let Some(start) = ext.get_mut::<Entries>().and_then(|e| e.0.pop()) else {
            return;
        };
        let recorders: Vec<std::sync::Arc<Recorder>> = live();
        if recorders.is_empty() {
            return;
        }
        let args = ext
            .get_mut::<Fields>()
            .map(|f| f.0.clone())
            .unwrap_or_default();
        for rec in recorders {
            rec.host("span", span.name(), start, args.clone());
        }
    }
}
