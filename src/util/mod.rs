//! Small helpers every stage may use; nothing here knows about SGLang.
pub mod sys;
