//! What the device did, in the runtime's trace: launches timed by the GPU's own
//! timestamps, on the device's GPU track. Part of the device layer (layer 4).
//!
//! This module owns [`DeviceTrace`]: the [`Recorder`] a traced runtime writes to, and,
//! where the device has `TIMESTAMP_QUERY`, the timestamp queries of its launches. A traced
//! launch's compute pass writes a timestamp as it begins and as it ends; just before the
//! submission that carries it, the queries are resolved and copied to a mappable buffer
//! **in the last command buffer of that same submission**, so tracing adds no submission.
//! The buffer is mapped after the submission and read at the next wait (a readback, a
//! [`DeviceTrace::finish`]), which adds no wait either.
//!
//! The GPU's clock has an origin of its own. A pass cannot begin before its submission,
//! so the offset from GPU time to the trace's time is at least `submitted − first begin`
//! for every submission: the largest such bound seen so far is used. It only grows, so
//! GPU events stay in the GPU's order and none starts before it was submitted.

pub use crate::trace::launch_args;
use crate::trace::{gpu_track, Event, Recorder};
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Launches one submission can time; later ones in the same submission get only their
/// host event.
pub const MAX_TIMED_LAUNCHES: u32 = 256;

/// A query set with room for [`MAX_TIMED_LAUNCHES`] launches, where it resolves to, and
/// the mappable buffer the results come back through. Reused once read.
#[derive(Debug)]
struct Slots {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

/// The timed launches of one submission.
#[derive(Debug)]
struct Batch {
    slots: Slots,
    /// Each launch's name and args, in the order of its queries.
    launches: Vec<(&'static str, Map<String, Value>)>,
    /// When the submission was made, in the recorder's microseconds.
    submitted_us: f64,
    /// 0 while the map is pending, 1 once mapped, 2 when the map failed.
    mapped: Arc<AtomicU8>,
}

/// The timestamp queries of a device that has them.
#[derive(Debug)]
struct GpuClock {
    period_ns: f32,
    /// Launches recorded for the next submission.
    open: Option<Batch>,
    /// Submitted, not yet read.
    in_flight: Vec<Batch>,
    free: Vec<Slots>,
    /// Microseconds to add to a GPU time to place it on the trace's clock.
    offset_us: Option<f64>,
}

/// A runtime's trace, as the device sees it: see the [module docs](self).
#[derive(Debug)]
pub struct DeviceTrace {
    recorder: Arc<Recorder>,
    device: wgpu::Device,
    track: u64,
    clock: Option<GpuClock>,
}

impl DeviceTrace {
    /// The trace of the device `device_id`, recorded into `recorder`; launches are timed
    /// on the GPU where `device` has `TIMESTAMP_QUERY`.
    pub fn new(
        recorder: Arc<Recorder>,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        device_id: u64,
        adapter: &str,
    ) -> DeviceTrace {
        let track = gpu_track(device_id);
        let clock = device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
            .then(|| GpuClock {
                period_ns: queue.get_timestamp_period(),
                open: None,
                in_flight: Vec::new(),
                free: Vec::new(),
                offset_us: None,
            });
        if clock.is_some() {
            recorder.name_track(track, format!("GPU {device_id}: {adapter}"));
        }
        DeviceTrace {
            recorder,
            device: device.clone(),
            track,
            clock,
        }
    }

    /// The recorder, for host events.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// Whether launches are timed on the GPU.
    pub fn has_gpu_clock(&self) -> bool {
        self.clock.is_some()
    }

    /// Where a launch's compute pass writes its two timestamps (the query set and the
    /// index of the first), or `None` without timestamps or room. The launch is read
    /// back as a GPU event named `kernel` with `args`.
    pub fn pass_queries(
        &mut self,
        kernel: &'static str,
        args: Map<String, Value>,
    ) -> Option<(wgpu::QuerySet, u32)> {
        let clock = self.clock.as_mut()?;
        if clock.open.is_none() {
            let slots = match clock.free.pop() {
                Some(s) => s,
                None => new_slots(&self.device)?,
            };
            clock.open = Some(Batch {
                slots,
                launches: Vec::new(),
                submitted_us: 0.0,
                mapped: Arc::new(AtomicU8::new(0)),
            });
        }
        let batch = clock.open.as_mut()?;
        let index = batch.launches.len() as u32;
        if index >= MAX_TIMED_LAUNCHES {
            return None;
        }
        batch.launches.push((kernel, args));
        Some((batch.slots.set.clone(), 2 * index))
    }

    /// Records, at the end of the last command buffer of a submission, the copy of this
    /// submission's timestamps to where they are read from.
    pub fn before_submit(&mut self, last: &mut wgpu::CommandEncoder) {
        let Some(batch) = self.clock.as_mut().and_then(|c| c.open.as_mut()) else {
            return;
        };
        if batch.launches.is_empty() {
            return;
        }
        let queries = 2 * batch.launches.len() as u32;
        let bytes = queries as u64 * wgpu::QUERY_SIZE as u64;
        last.resolve_query_set(&batch.slots.set, 0..queries, &batch.slots.resolve, 0);
        last.copy_buffer_to_buffer(&batch.slots.resolve, 0, &batch.slots.read, 0, bytes);
    }

    /// Takes back the queries [`DeviceTrace::pass_queries`] just gave, for a pass that
    /// was not recorded after all: a query that is resolved but never written would stall
    /// the copy (Vulkan waits for it).
    pub fn cancel_pass(&mut self, first_query: u32) {
        if let Some(batch) = self.clock.as_mut().and_then(|c| c.open.as_mut()) {
            if 2 * (batch.launches.len() as u32) == first_query + 2 {
                batch.launches.pop();
            }
        }
    }

    /// After the submission: maps the timestamps, to be read at the next wait.
    /// `submitted_us` is when it was made; a submission that failed (`ok` false) ran
    /// nothing, and its launches are dropped with their buffers (which may hold an earlier
    /// submission's times).
    pub fn after_submit(&mut self, submitted_us: f64, ok: bool) {
        let Some(clock) = self.clock.as_mut() else {
            return;
        };
        let Some(mut batch) = clock.open.take() else {
            return;
        };
        if !ok || batch.launches.is_empty() {
            if batch.launches.is_empty() {
                clock.free.push(batch.slots);
            }
            return;
        }
        batch.submitted_us = submitted_us;
        let bytes = 2 * batch.launches.len() as u64 * wgpu::QUERY_SIZE as u64;
        let mapped = Arc::clone(&batch.mapped);
        batch
            .slots
            .read
            .map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
                mapped.store(if r.is_ok() { 1 } else { 2 }, Ordering::Release);
            });
        clock.in_flight.push(batch);
    }

    /// Reads the timestamps of every submission the GPU has finished (whose map callback
    /// ran) and records their launches as GPU events. Does not wait.
    pub fn collect(&mut self) {
        let Some(clock) = self.clock.as_mut() else {
            return;
        };
        let mut still = Vec::new();
        for batch in std::mem::take(&mut clock.in_flight) {
            match batch.mapped.load(Ordering::Acquire) {
                0 => still.push(batch),
                state => {
                    if state == 1 {
                        let bytes = 2 * batch.launches.len() as u64 * wgpu::QUERY_SIZE as u64;
                        let ticks: Vec<u64> = match batch.slots.read.get_mapped_range(0..bytes) {
                            Ok(view) => bytemuck::pod_collect_to_vec(&view[..]),
                            Err(_) => Vec::new(),
                        };
                        batch.slots.read.unmap();
                        place(clock, &self.recorder, self.track, &batch, &ticks);
                    }
                    clock.free.push(batch.slots);
                }
            }
        }
        clock.in_flight = still;
    }

    /// Gives up the timestamps still out, so that [`DeviceTrace::finish`] does not wait for
    /// a GPU that outlived its timeout: their launches keep their host events only.
    pub fn abandon(&mut self) {
        if let Some(clock) = self.clock.as_mut() {
            clock.in_flight.clear();
        }
    }

    /// Waits for the GPU, reads every timestamp still out, and writes the trace.
    pub fn finish(&mut self) -> crate::error::Result<()> {
        if self.clock.as_ref().is_some_and(|c| !c.in_flight.is_empty()) {
            // A lost device panics in poll; its launches then have only host events.
            let device = &self.device;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                device.poll(wgpu::PollType::wait_indefinitely())
            }));
        }
        self.collect();
        self.recorder.write()
    }
}

impl Drop for DeviceTrace {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            tracing::warn!(path = %crate::shown::shown_path(self.recorder.path()), error = %e, "the trace was not written");
        }
    }
}

/// Records a read batch's launches on the GPU track; see the [module docs](self) for how
/// GPU time is placed on the trace's clock. A launch whose timer went backwards, or whose
/// queries read zero (never written), is left out; one shorter than a tick lasts 0.
fn place(clock: &mut GpuClock, recorder: &Recorder, track: u64, batch: &Batch, ticks: &[u64]) {
    let period = clock.period_ns as f64;
    let us = |tick: u64| tick as f64 * period / 1000.0;
    let spans: Vec<Option<(f64, f64)>> = ticks
        .chunks_exact(2)
        .map(|p| (p[1] >= p[0] && p[0] > 0).then(|| (us(p[0]), us(p[1]))))
        .collect();
    let Some(first) = spans.iter().flatten().map(|s| s.0).reduce(f64::min) else {
        return;
    };
    let bound = batch.submitted_us - first;
    let offset = clock.offset_us.map_or(bound, |o| o.max(bound));
    clock.offset_us = Some(offset);
    for ((name, args), span) in batch.launches.iter().zip(spans) {
        let Some((begin, end)) = span else { continue };
        recorder.record(Event {
            name: (*name).to_string(),
            cat: "gpu",
            ts_us: begin + offset,
            dur_us: end - begin,
            tid: track,
            args: args.clone(),
        });
    }
}

/// A fresh query set and its buffers, or `None` (logged) when the device refuses: the
/// trace then goes without GPU times rather than failing the launch.
fn new_slots(device: &wgpu::Device) -> Option<Slots> {
    let queries = 2 * MAX_TIMED_LAUNCHES;
    let bytes = crate::plan::align_up(
        queries as u64 * wgpu::QUERY_SIZE as u64,
        wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT,
    );
    let (slots, err) = super::error_scope(device, || Slots {
        set: device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("forge trace timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: queries,
        }),
        resolve: device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("forge trace resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        }),
        read: device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("forge trace readback"),
            size: bytes,
            usage: super::STAGING_USAGE,
            mapped_at_creation: false,
        }),
    });
    match err {
        None => Some(slots),
        Some(e) => {
            tracing::warn!(error = %super::error_text(&e), "no timestamp queries for the trace; launches get host times only");
            None
        }
    }
}
