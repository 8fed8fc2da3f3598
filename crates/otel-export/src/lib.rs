//! OpenTelemetry export of dissected RTPS traffic.
