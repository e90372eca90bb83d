//! The hardware profile: what the tuner's manifests are keyed by. Layer 1 (values).
//!
//! This module owns [`HardwareProfile`], a plain, serializable description of an adapter
//! (vendor, device, name, driver, backend, type, subgroup sizes, limits and features), and
//! its [`HardwareProfile::topology_hash`]: a sha256 over a canonical serialization, stable
//! across processes, that names the manifest directory for that hardware.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// A stable description of an adapter. Two profiles of the same adapter and driver are
/// equal, and so are their hashes, in any process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareProfile {
    /// PCI vendor id (backend-specific).
    pub vendor: u32,
    /// PCI device id (backend-specific).
    pub device: u32,
    /// Adapter name.
    pub name: String,
    /// Driver name.
    pub driver: String,
    /// Driver version and details.
    pub driver_info: String,
    /// wgpu backend, lower case: `vulkan`, `metal`, `dx12`, `gl`.
    pub backend: String,
    /// Device type: `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` or `Other`.
    pub device_type: String,
    /// Smallest subgroup size.
    pub subgroup_min_size: u32,
    /// Largest subgroup size.
    pub subgroup_max_size: u32,
    /// Every wgpu limit, by field name.
    pub limits: BTreeMap<String, u64>,
    /// The adapter's features, by wgpu's flag names, sorted.
    pub features: Vec<String>,
}

impl HardwareProfile {
    /// The profile of an adapter.
    pub fn from_adapter(adapter: &wgpu::Adapter) -> Self {
        Self::from_parts(&adapter.get_info(), &adapter.limits(), adapter.features())
    }

    /// The profile from an adapter's info, limits and features.
    pub fn from_parts(
        info: &wgpu::AdapterInfo,
        limits: &wgpu::Limits,
        features: wgpu::Features,
    ) -> Self {
        let mut feature_names: Vec<String> = features
            .iter_names()
            .map(|(name, _)| name.to_string())
            .collect();
        feature_names.sort();
        feature_names.dedup();
        HardwareProfile {
            vendor: info.vendor,
            device: info.device,
            name: info.name.clone(),
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            backend: info.backend.to_str().to_string(),
            device_type: format!("{:?}", info.device_type),
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            limits: limits_map(limits),
            features: feature_names,
        }
    }

    /// Hex sha256 of the profile's canonical JSON (fields in declaration order, limits
    /// sorted by name, features sorted), prefixed by a format tag so a change of format
    /// can never collide with an old hash.
    pub fn topology_hash(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"wgsl-forge topology v1\n");
        // Serializing plain strings, integers, a BTreeMap and a Vec cannot fail; fall back to
        // the Debug text all the same rather than panic.
        match serde_json::to_vec(self) {
            Ok(bytes) => hasher.update(&bytes),
            Err(_) => hasher.update(format!("{self:?}").as_bytes()),
        }
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Every field of `wgpu::Limits` by name. wgpu offers no iterator over its limits, but its
/// derived `Debug` lists every field as `name: integer`, which is stable for a wgpu version.
fn limits_map(limits: &wgpu::Limits) -> BTreeMap<String, u64> {
    let text = format!("{limits:?}");
    let body = text
        .split_once('{')
        .and_then(|(_, rest)| rest.rsplit_once('}'))
        .map(|(body, _)| body)
        .unwrap_or("");
    body.split(',')
        .filter_map(|field| {
            let (name, value) = field.split_once(':')?;
            Some((name.trim().to_string(), value.trim().parse::<u64>().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> wgpu::AdapterInfo {
        let mut info = wgpu::AdapterInfo::new(wgpu::DeviceType::DiscreteGpu, wgpu::Backend::Vulkan);
        info.name = "Test GPU".into();
        info.vendor = 0x10de;
        info.device = 0x2684;
        info.driver = "test".into();
        info.driver_info = "1.0".into();
        info.subgroup_min_size = 32;
        info.subgroup_max_size = 32;
        info
    }

    #[test]
    fn limits_map_has_every_field() {
        let limits = wgpu::Limits::default();
        let map = limits_map(&limits);
        assert_eq!(
            map.get("max_storage_buffer_binding_size"),
            Some(&limits.max_storage_buffer_binding_size)
        );
        assert_eq!(
            map.get("max_compute_workgroups_per_dimension"),
            Some(&65535)
        );
        assert_eq!(map.get("max_buffer_size"), Some(&limits.max_buffer_size));
        assert_eq!(map.len(), format!("{limits:?}").matches(':').count());
    }

    #[test]
    fn hash_is_stable_and_sensitive() {
        let features = wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY;
        let a = HardwareProfile::from_parts(&info(), &wgpu::Limits::default(), features);
        let b = HardwareProfile::from_parts(&info(), &wgpu::Limits::default(), features);
        assert_eq!(a, b);
        assert_eq!(a.topology_hash(), b.topology_hash());
        assert_eq!(a.topology_hash().len(), 64);
        assert_eq!(
            a.features,
            vec!["SHADER_F16".to_string(), "TIMESTAMP_QUERY".to_string()]
        );

        let mut c = a.clone();
        c.driver_info = "1.1".into();
        assert_ne!(a.topology_hash(), c.topology_hash());

        let mut limits = wgpu::Limits::default();
        limits.max_storage_buffer_binding_size += 4;
        let d = HardwareProfile::from_parts(&info(), &limits, features);
        assert_ne!(a.topology_hash(), d.topology_hash());

        let e = HardwareProfile::from_parts(
            &info(),
            &wgpu::Limits::default(),
            wgpu::Features::SHADER_F16,
        );
        assert_ne!(a.topology_hash(), e.topology_hash());
    }

    #[test]
    fn profile_round_trips_through_json() {
        let a =
            HardwareProfile::from_parts(&info(), &wgpu::Limits::default(), wgpu::Features::empty());
        let json = serde_json::to_string(&a).expect("serializes");
        let back: HardwareProfile = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(a, back);
        assert_eq!(a.topology_hash(), back.topology_hash());
    }
}
