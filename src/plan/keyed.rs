//! Errors placed on their key. serde_yaml places errors raised inside a value's `Deserialize`
//! at the start of the enclosing mapping, not at the value. Errors about a known key carry it
//! between these markers so that `spec::parse` can move the position onto the key's own line.
//! It sits below every other `plan` module, which all raise such errors.

pub(crate) const KEY_TAG: char = '\u{1}';

pub(crate) fn tag_key(key: &str, msg: &str) -> String {
    format!("{KEY_TAG}{key}{KEY_TAG}{msg}")
}

/// After a key's tag: place the error on the key's own name, not on its value (a key that is
/// itself wrong, such as an SLO's column that is none).
pub(crate) const AT_NAME: char = '\u{2}';

/// [`tag_key`] for an error about the key itself: placed on its name.
pub(crate) fn tag_key_name(key: &str, msg: &str) -> String {
    format!("{KEY_TAG}{key}{KEY_TAG}{AT_NAME}{msg}")
}
