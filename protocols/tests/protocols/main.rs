//! The protocols crate's integration tests, as one test binary: Active
//! Messages on the three controllers, the messaging-cost study, user-level
//! messaging and the bulk transfer (each with its property tests), and
//! the results a study keeps.

mod am_all;
mod am_cm5;
mod am_props;
mod am_results;
mod am_sp;
mod am_sp_bulk;
mod costs;
mod modes_props;
mod results;
mod results_props;
mod transfer;
mod transfer_props;
mod user;
mod user_props;
