//! The QoS an SEDP endpoint announces: the policy kinds as on the wire, and their names.

/// Reliability kind on the wire (RTPS values: 1 best effort, 2 reliable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reliability {
    BestEffort,
    Reliable,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Durability {
    Volatile,
    TransientLocal,
    Transient,
    Persistent,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum History {
    KeepLast(i32),
    KeepAll,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Liveliness {
    Automatic,
    ManualByParticipant,
    ManualByTopic,
    Other(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ownership {
    Shared,
    Exclusive,
    Other(u32),
}

impl Reliability {
    pub fn name(&self) -> &'static str {
        match self {
            Self::BestEffort => "best_effort",
            Self::Reliable => "reliable",
            Self::Other(_) => "other",
        }
    }
}
impl Durability {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Volatile => "volatile",
            Self::TransientLocal => "transient_local",
            Self::Transient => "transient",
            Self::Persistent => "persistent",
            Self::Other(_) => "other",
        }
    }
    /// Rank for request/offered compatibility (higher offers more).
    pub fn rank(&self) -> u32 {
        match self {
            Self::Volatile => 0,
            Self::TransientLocal => 1,
            Self::Transient => 2,
            Self::Persistent => 3,
            Self::Other(v) => *v,
        }
    }
}
impl Liveliness {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Automatic => "automatic",
            Self::ManualByParticipant => "manual_by_participant",
            Self::ManualByTopic => "manual_by_topic",
            Self::Other(_) => "other",
        }
    }
    pub fn rank(&self) -> u32 {
        match self {
            Self::Automatic => 0,
            Self::ManualByParticipant => 1,
            Self::ManualByTopic => 2,
            Self::Other(v) => *v,
        }
    }
}
impl Ownership {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Exclusive => "exclusive",
            Self::Other(_) => "other",
        }
    }
}
impl History {
    pub fn name(&self) -> String {
        match self {
            Self::KeepLast(d) => format!("keep_last({d})"),
            Self::KeepAll => "keep_all".to_string(),
            Self::Other(v) => format!("other({v})"),
        }
    }
}

/// QoS announced with an endpoint. `None` = not sent (the spec default applies).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointQos {
    pub reliability: Option<Reliability>,
    pub durability: Option<Durability>,
    pub history: Option<History>,
    /// Deadline period in ns; `Some(None)` = infinite.
    pub deadline_ns: Option<Option<i64>>,
    pub liveliness: Option<Liveliness>,
    pub liveliness_lease_ns: Option<Option<i64>>,
    pub ownership: Option<Ownership>,
    pub ownership_strength: Option<i32>,
    pub partitions: Vec<String>,
    pub data_representation: Vec<i16>,
}
