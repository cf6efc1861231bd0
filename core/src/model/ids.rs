//! Typed identifiers of the model (spec `two-level-grid-scheduler.md` D2).

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty), $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl From<$inner> for $name {
            fn from(v: $inner) -> Self {
                Self(v)
            }
        }
    };
}

id_type!(
    /// A job, unique within a workload or a grid (for SWF traces: the job number, field 1).
    JobId(u64), ""
);
id_type!(
    /// An advance reservation, unique within a site.
    ReservationId(u64), "r"
);
id_type!(
    /// A user (for SWF traces: field 12). Live services intern user names to these numbers.
    UserId(u32), "u"
);
id_type!(
    /// A software licence type, an index into [`super::Platform::licences`].
    LicenceId(u16), "lic"
);
id_type!(
    /// A machine, an index into [`super::Platform::machines`].
    MachineId(u32), "m"
);
id_type!(
    /// A cluster (managed by one local scheduler), an index into [`super::Platform::clusters`].
    ClusterId(u32), "c"
);
id_type!(
    /// A site, an index into [`super::Platform::sites`].
    SiteId(u32), "s"
);

impl MachineId {
    /// The index of this machine in the platform's machine list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl ClusterId {
    /// The index of this cluster in the platform's cluster list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl LicenceId {
    /// The index of this licence type in the platform's licence catalogue.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
