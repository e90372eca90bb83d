//! STUB
/// Hardware profile. STUB
pub struct HardwareProfile;
