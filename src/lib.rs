//! # knudsen
//!
//! Steady rarefied gas flows from the Shakhov kinetic model (BGK when Pr = 1), solved by the
//! discrete velocity method with a memory-reduced source iteration.
//!
//! For each discrete velocity xi, the steady model equation
//!
//! ```text
//! xi . grad f = nu (f^S[f] - f),       nu = 1 / tau = delta rho T^(1 - omega)
//! ```
//!
//! is iterated as `xi . grad f^{n+1} = nu^n (f^{S,n} - f^{n+1})`: with f^S lagged, every
//! velocity is an independent first-order upwind sweep along its characteristics. Velocities
//! go in batches that never mix octants; each batch sweeps the z-slices in upwind order and
//! keeps one or two slices per velocity (four under second order), so storage is O(N^2 x batch), not O(N^3 x M^3). Each
//! finished slice adds its share to the new moments and wall fluxes and is overwritten.
//!
//! Between sweeps, `solver.acceleration = "gsis"` solves a macroscopic correction
//! `L dW = -vol nu (C(W^n) - C(W*))` (linearised Navier-Stokes-Fourier fluxes of the upwind
//! split, [`solver::synthetic`]) that carries mass, momentum and energy across the domain at
//! once; its right-hand side vanishes at source iteration's fixed point, so both converge to
//! the same solution, GSIS in tens of sweeps where source iteration needs ~delta. The
//! correction is solved by GMRES with a multigrid W-cycle on the GPU the sweep uses (in f64
//! with the CUDA backend, in f32 with the wgpu backend from 8192 cells) and on the host in
//! f64 otherwise. The default, `"auto"`, makes it only where its measured cost pays
//! (`solver::synthetic::ledger`).
//!
//! `solver.scheme = "second_order"` sweeps with the diamond difference
//! `F_out = 2 f - F_in` per axis, clamped per axis to the range of the cell's inflows, f^S
//! and the upwind neighbours' face values along that axis ([`backend::upwind2`]): second
//! order on stretched grids, smooth 3D fields included, with a discrete maximum principle,
//! at four slices per velocity (the cell values and the face values emitted along x, y, z).
//!
//! The pipeline is [`config`] (validated JSON) -> [`grid`] (physical and velocity grids) ->
//! [`plan`] (batches from a memory budget) -> [`backend`] (one sweep on CPU or GPU) driven by
//! [`solver`] (the iteration) -> [`output`] (HDF5 + XDMF, CSV, summary.json).
//! `docs/model.md` has the equations, `docs/architecture.md` the layout.
//!
//! ```
//! use knudsen::{backend::{cpu::CpuBackend, Backend}, config::Config, problem::Problem, solver::Solver};
//! use std::sync::Arc;
//!
//! let wall = r#"{"type": "diffuse_wall", "temperature": 1.0}"#;
//! let lid = r#"{"type": "diffuse_wall", "temperature": 1.0, "velocity": [0.1, 0, 0]}"#;
//! let json = format!(r#"{{
//!     "gas": {{"kn": 1.0}},
//!     "grid": {{"x": {{"min": 0, "max": 1, "cells": 4}},
//!               "y": {{"min": 0, "max": 1, "cells": 4}},
//!               "z": {{"min": 0, "max": 1, "cells": 4}}}},
//!     "velocity": {{"points": 10}},
//!     "boundaries": {{"x_min": {wall}, "x_max": {wall}, "y_min": {wall},
//!                     "y_max": {lid}, "z_min": {wall}, "z_max": {wall}}},
//!     "solver": {{"tolerance": 1e-6}}
//! }}"#);
//! let config = Config::from_json(&json).unwrap();
//! let problem = Arc::new(Problem::new(&config));
//! let backend = CpuBackend::new(problem.clone(), 64 << 20).unwrap();
//! let result = Solver::new(&problem, Box::new(backend)).run(|_| {}).unwrap();
//! assert!(result.converged);
//! // The lid drags the gas along +x next to it.
//! let top = problem.grid.index(1, 3, 1);
//! assert!(result.fields[top].u[0] > 0.0);
//! ```

pub mod backend;
pub mod bench;
pub mod body;
pub mod boundary;
pub mod config;
pub mod damping;
pub mod grid;
pub mod loads;
pub mod model;
pub mod output;
pub mod parallel;
pub mod partner;
pub mod plan;
pub mod problem;
pub mod solver;
pub mod validate;
