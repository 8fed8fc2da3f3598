//! ROS 2 name demangling: `rt/chatter` → `/chatter`, `rq/add_twoRequest` →
//! `/add_two` (service request), `std_msgs::msg::dds_::String_` → `std_msgs/msg/String`.

/// What a DDS topic is in ROS 2 terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RosKind {
    Topic,
    ServiceRequest,
    ServiceReply,
    Action,
}

/// The ROS 2 name of a DDS topic, if it follows the ROS 2 mangling.
pub(crate) fn demangle_topic(name: &str) -> Option<(String, RosKind)> {
    if let Some(rest) = name.strip_prefix("rt/") {
        // Actions are topics below `_action/` (feedback, status).
        let kind = if rest.contains("/_action/") {
            RosKind::Action
        } else {
            RosKind::Topic
        };
        return Some((format!("/{rest}"), kind));
    }
    if let Some(rest) = name.strip_prefix("rq/") {
        let base = rest.strip_suffix("Request").unwrap_or(rest);
        return Some((format!("/{base}"), RosKind::ServiceRequest));
    }
    if let Some(rest) = name.strip_prefix("rr/") {
        let base = rest.strip_suffix("Reply").unwrap_or(rest);
        return Some((format!("/{base}"), RosKind::ServiceReply));
    }
    None
}

/// The ROS 2 name of a DDS type, if it follows the ROS 2 mangling.
pub(crate) fn demangle_type(name: &str) -> Option<String> {
    let (pkg_kind, ty) = name.rsplit_once("::dds_::")?;
    let ty = ty.strip_suffix('_').unwrap_or(ty);
    if ty.is_empty() || pkg_kind.is_empty() {
        return None;
    }
    Some(format!("{}/{}", pkg_kind.replace("::", "/"), ty))
}

/// The topic's display name: demangled when asked and possible.
pub(crate) fn display_topic(name: &str, ros: bool) -> String {
    if ros {
        if let Some((n, _)) = demangle_topic(name) {
            return n;
        }
    }
    name.to_string()
}

pub(crate) fn display_type(name: &str, ros: bool) -> String {
    if ros {
        if let Some(n) = demangle_type(name) {
            return n;
        }
    }
    name.to_string()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn ros_names() {
        assert_eq!(
            demangle_topic("rt/chatter"),
            Some(("/chatter".into(), RosKind::Topic))
        );
        assert_eq!(
            demangle_topic("rq/talker/get_parametersRequest"),
            Some(("/talker/get_parameters".into(), RosKind::ServiceRequest))
        );
        assert_eq!(
            demangle_topic("rr/talker/get_parametersReply"),
            Some(("/talker/get_parameters".into(), RosKind::ServiceReply))
        );
        assert_eq!(demangle_topic("ros_discovery_info"), None);
        assert_eq!(
            demangle_type("std_msgs::msg::dds_::String_").as_deref(),
            Some("std_msgs/msg/String")
        );
        assert_eq!(
            demangle_type("rcl_interfaces::srv::dds_::GetParameters_Response_").as_deref(),
            Some("rcl_interfaces/srv/GetParameters_Response")
        );
        assert_eq!(demangle_type("HelloWorldData::Msg"), None);
    }
}
