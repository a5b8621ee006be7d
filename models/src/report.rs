//! Runs every model and every fault variant; renders the table and JSON.
