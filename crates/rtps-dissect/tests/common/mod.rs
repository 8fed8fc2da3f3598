//! RTPS messages written as hex, and their submessages, for the submessage tests.
#![allow(dead_code)]

use rtps_dissect::rtps::{RtpsHeader, SubmessageError, SubmessageIter};
use rtps_dissect::Submessage;

/// Hex (spaces and line breaks allowed) as bytes.
pub fn hexb(s: &str) -> Vec<u8> {
    hex::decode(s.replace([' ', '\n'], "")).expect("hex")
}

/// The message of an RTPS header and submessages, both in hex.
pub fn message(header: &str, submessages: &str) -> Vec<u8> {
    hexb(&format!("{header}{submessages}"))
}

/// Every submessage of a message.
pub fn parse(msg: &[u8]) -> Vec<Result<Submessage<'_>, SubmessageError<'_>>> {
    let h = RtpsHeader::parse(msg).expect("header");
    SubmessageIter::new(msg, &h).collect()
}

/// The one submessage of a message.
pub fn one(msg: &[u8]) -> Submessage<'_> {
    let mut v = parse(msg);
    assert_eq!(v.len(), 1, "{v:?}");
    v.remove(0).expect("submessage")
}
