mod common {
    #[path = "archives.rs"]
    pub mod archives;
    #[path = "fixtures.rs"]
    pub mod fixtures;
}
#[path = "concat/mod.rs"]
mod concat;
