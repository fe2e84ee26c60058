//! Chunk lengths along one dimension as users give them (input: `--chunks time=30`, `time=month`,
//! `time=6h`, `basin=by:basin_id`; output: the dimension's chunk edges), for compaction, copies and
//! appends.
//!
//! - [`ChunkLength`] (`chunking/length`): what was asked: a number of elements, a calendar unit
//!   (`day`, `month`, `season`, `year`) or a duration (`6h`, `10d`), or one chunk per run of equal
//!   values of a 1-D variable (`by:VAR`).
//! - `chunking/calendar` (pure): the edges a calendar unit gives over a time coordinate's instants,
//!   in its own CF calendar (`cftime`): the steps whose time falls in one month (season, year, ...)
//!   make one chunk, so a month with missing days is the days it has and a step at 12:00 belongs
//!   to its day.
//! - `chunking/groups` (pure): the edges of the runs of equal values (`np.unique(ids,
//!   return_counts=True)` for sorted ids).
//! - `chunking/resolve`: reads the time coordinate (its `units` and `calendar`) or the grouping
//!   variable through a store's reader and gives the edges; a time dimension without a CF time
//!   coordinate is refused in one line naming it; [`TimeCoordinate`] describes a grid of calendar
//!   periods as a user reads it (`vzarr info`).

mod calendar;
mod groups;
mod length;
mod resolve;

pub use calendar::CalendarUnit;
pub use length::ChunkLength;
pub use resolve::TimeCoordinate;
pub(crate) use resolve::{regular_edges, resolve_edges, resolve_tail_edges, EdgesError};
