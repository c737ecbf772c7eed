//! Batches on the wide engine: groups of `W` vertices transposed into the
//! wide register file and out of it, tails included, under each state policy.

use super::lanes::RowSet;
use super::{LaneState, NotIndependent, RunContext, WideShader, layout};
use crate::interp::{Invocation, enter};
use crate::machine::{ShaderConfig, Stop};
use crate::program::Program;
use crate::state::{Uniforms, UnitState};

/// One vertex's registers (`v0`–`v15` or `o0`–`o15`).
pub(crate) type Registers = [crate::Vec4; 16];

fn bits(mask: u16) -> impl Iterator<Item = usize> {
    (0..16).filter(move |n| mask >> n & 1 != 0)
}

fn active(n: usize) -> u32 {
    if n >= 32 { u32::MAX } else { (1u32 << n) - 1 }
}

/// Runs one invocation per state (each from its own state, left with its
/// final state), as [`crate::Shader::run_batch`] promises; `uniforms` are
/// converted for the shader's precision.
pub(crate) fn run_states(
    wide: &WideShader,
    program: &Program,
    config: &ShaderConfig,
    uniforms: &Uniforms,
    states: &mut [UnitState],
) -> Vec<Stop> {
    let lanes = wide.width().lanes();
    let invocation = Invocation::new(program, config, uniforms);
    let cx = RunContext {
        uniforms,
        invocation: &invocation,
        budget: config.budget,
        entry: config.entry,
        carry: false,
    };
    let mut file = LaneState::new(lanes);
    let mut stops = vec![Stop::End; states.len()];
    // Only registers some instruction reads go in (no other can change a
    // result; a lane handed over reads only those too), only the components
    // each lane's path wrote come out (the others keep their values).
    // (The optimised IR may read a register to blend it with a masked
    // write: its blocks' reads count too.)
    let ir_temps = wide
        .rows_read()
        .rows()
        .filter(|&r| (layout::TEMP..layout::OUTPUT).contains(&(r as usize)))
        .fold(0u16, |m, r| m | 1 << ((r as usize - layout::TEMP) / 4));
    // Registers some instruction writes go in too: a lane handed over to the
    // interpreter comes back whole, and its written registers are stored
    // (the rows no path wrote must hold the state's values).
    let temps = program.temps_read() | ir_temps | wide.temps_written();
    let (inputs, outputs) = (program.inputs_read(), wide.outputs_written());
    for (chunk, stops) in states.chunks_mut(lanes).zip(stops.chunks_mut(lanes)) {
        for state in chunk.iter_mut() {
            enter(config.precision, program, config.entry, state);
        }
        file.load_states(chunk, inputs, temps, outputs);
        let result = wide.run(
            &mut file,
            active(chunk.len()),
            &cx,
            &mut |mask, f, stop, rows| {
                f.store_states(chunk, mask, rows);
                for (lane, slot) in stops.iter_mut().enumerate() {
                    if mask >> lane & 1 != 0 {
                        *slot = stop;
                    }
                }
            },
        );
        debug_assert_eq!(result, Ok(()), "independent lanes never fall back");
    }
    stops
}

/// A batch in the emulator's layout (see [`crate::Shader::run_vertices`]).
pub(crate) struct VertexBatch<'a> {
    pub inputs: &'a [Registers],
    pub input_mask: u16,
    pub outputs: &'a mut [Registers],
    pub output_mask: u16,
}

/// Runs `batch` on the wide engine; `carry` selects the state policy
/// `Carry` (else `Reset`). `record(index, stop)` receives every vertex's stop
/// in order; `sequential` runs one vertex from the state given on the
/// single-vertex path (`Carry` groups whose lanes are not independent).
/// Returns how many vertices the wide engine shaded.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_vertices(
    wide: &WideShader,
    program: &Program,
    config: &ShaderConfig,
    uniforms: &Uniforms,
    batch: VertexBatch<'_>,
    carry: bool,
    state: &mut UnitState,
    record: &mut dyn FnMut(usize, Stop),
    sequential: &mut dyn FnMut(&mut UnitState) -> Stop,
) -> usize {
    let lanes = wide.width().lanes();
    let invocation = Invocation::new(program, config, uniforms);
    let cx = RunContext {
        uniforms,
        invocation: &invocation,
        budget: config.budget,
        entry: config.entry,
        carry,
    };
    // Inputs the program reads: per lane where the batch gives them, else the
    // starting state's (no instruction writes an input).
    let lane_inputs = batch.input_mask & program.inputs_read();
    // Outputs per lane where the program writes them, else the starting state's.
    let lane_outputs = batch.output_mask & wide.outputs_written();
    let kept_outputs = batch.output_mask & !wide.outputs_written();
    let mut start = state.clone();
    enter(config.precision, program, config.entry, &mut start);
    let mut base = LaneState::new(lanes);
    for lane in 0..lanes {
        base.load_lane(lane, &start);
    }
    let mut file = base.clone();
    // Rows a group may observe from the one before: rows some block reads
    // as it starts, and the outputs copied out per lane. (A lane handed over
    // to the interpreter may read any row: then every row written is
    // restored; it reports every row the program writes.)
    let every_row = *wide.rows_written();
    let mut observable = *wide.rows_read();
    // (A lane handed over mid-block reads what its instructions read.)
    for reg in bits(program.temps_read()) {
        for c in 0..4 {
            observable.insert((layout::TEMP + 4 * reg + c) as u16);
        }
    }
    for row in layout::A0X..layout::STATE_ROWS {
        observable.insert(row as u16);
    }
    for reg in bits(lane_outputs) {
        for c in 0..4 {
            observable.insert((layout::OUTPUT + 4 * reg + c) as u16);
        }
    }
    let mut carry_wide = !(carry && wide.carry_always_dependent(config.entry));
    // Carry: each lane's values of the rows its path wrote.
    let mut lane_values = vec![[0u32; layout::STATE_ROWS]; if carry { lanes } else { 0 }];
    let mut shaded = 0;
    let groups = batch
        .inputs
        .chunks(lanes)
        .zip(batch.outputs.chunks_mut(lanes));
    for (g, (inputs, outputs)) in groups.enumerate() {
        let first = g * lanes;
        if !carry_wide {
            for (k, (vertex_in, vertex_out)) in inputs.iter().zip(outputs.iter_mut()).enumerate() {
                copy_masked(&mut state.inputs, vertex_in, batch.input_mask);
                let stop = sequential(state);
                copy_masked(vertex_out, &state.outputs, batch.output_mask);
                record(first + k, stop);
            }
            continue;
        }
        for reg in bits(lane_inputs) {
            file.set_inputs(reg, inputs);
        }
        let n = inputs.len();
        if !carry {
            let mut written = RowSet::default();
            let mut handed_over = false;
            let mut stops = [Stop::End; 32];
            let result = wide.run(&mut file, active(n), &cx, &mut |mask, f, stop, rows| {
                written.union_with(rows);
                handed_over |= *rows == every_row;
                for reg in bits(lane_outputs) {
                    f.outputs_to(reg, mask, outputs);
                }
                for (lane, slot) in stops.iter_mut().enumerate().take(n) {
                    if mask >> lane & 1 != 0 {
                        *slot = stop;
                    }
                }
            });
            // Outputs no instruction writes keep the given state's value.
            for vertex in outputs.iter_mut() {
                copy_masked(vertex, &start.outputs, kept_outputs);
            }
            debug_assert_eq!(result, Ok(()), "independent lanes never fall back");
            for (k, &stop) in stops[..n].iter().enumerate() {
                record(first + k, stop);
            }
            shaded += n;
            // The next group starts from the given state again.
            if handed_over {
                file.copy_rows(&base, &written);
            } else {
                file.copy_rows(&base, &written.intersection(&observable));
            }
            continue;
        }
        // Carry: each lane's own writes over the state the previous vertex
        // left (converted as the invocation starts).
        let mut stops = [None; 32];
        let outcome = wide.run(&mut file, active(n), &cx, &mut |mask, f, stop, rows| {
            for (lane, slot) in stops.iter_mut().enumerate().take(n) {
                if mask >> lane & 1 != 0 {
                    *slot = Some((stop, *rows));
                    let values = &mut lane_values[lane];
                    for r in rows.rows() {
                        values[r as usize] = f.row(r as usize)[lane];
                    }
                }
            }
        });
        match outcome {
            Ok(()) => {
                let written = stops[0].map(|(_, rows)| rows);
                if n > 0
                    && stops[..n]
                        .iter()
                        .all(|r| r.map(|(_, rows)| rows) == written)
                {
                    // Every lane wrote the same rows (one path): a row no lane
                    // wrote ends every vertex with the carried state's value
                    // converted as an invocation starts (the conversion is
                    // idempotent), the others with the lane's own value.
                    let rows = written.expect("every lane finishes");
                    enter(config.precision, program, config.entry, state);
                    for (k, vertex_out) in outputs.iter_mut().enumerate() {
                        for reg in bits(batch.output_mask) {
                            let mut v = state.outputs[reg];
                            for (c, x) in v.iter_mut().enumerate() {
                                let row = layout::OUTPUT + 4 * reg + c;
                                if rows.contains(row as u16) {
                                    *x = f32::from_bits(lane_values[k][row]);
                                }
                            }
                            vertex_out[reg] = v;
                        }
                        record(first + k, stops[k].expect("every lane finishes").0);
                    }
                    copy_masked(&mut state.inputs, &inputs[n - 1], batch.input_mask);
                    for row in rows.rows() {
                        set_row(state, row as usize, lane_values[n - 1][row as usize]);
                    }
                    shaded += n;
                    continue;
                }
                for (k, result) in stops[..n].iter().enumerate() {
                    let (stop, rows) = result.expect("every lane finishes");
                    copy_masked(&mut state.inputs, &inputs[k], batch.input_mask);
                    enter(config.precision, program, config.entry, state);
                    for row in rows.rows() {
                        set_row(state, row as usize, lane_values[k][row as usize]);
                    }
                    copy_masked(&mut outputs[k], &state.outputs, batch.output_mask);
                    record(first + k, stop);
                }
                shaded += n;
            }
            Err(NotIndependent) => {
                // Lanes depend on each other here (and most likely in the
                // next groups too): one after another from now on.
                carry_wide = false;
                for (k, (vertex_in, vertex_out)) in
                    inputs.iter().zip(outputs.iter_mut()).enumerate()
                {
                    copy_masked(&mut state.inputs, vertex_in, batch.input_mask);
                    let stop = sequential(state);
                    copy_masked(vertex_out, &state.outputs, batch.output_mask);
                    record(first + k, stop);
                }
            }
        }
    }
    shaded
}

/// Sets the state register component of wide-register-file row `row`.
fn set_row(state: &mut UnitState, row: usize, bits: u32) {
    let f = f32::from_bits(bits);
    match row {
        r if r < layout::CONVERTED => state.inputs[r / 4][r % 4] = f,
        r if r < layout::TEMP => {}
        r if r < layout::OUTPUT => state.temps[(r - layout::TEMP) / 4][r % 4] = f,
        r if r < layout::A0X => state.outputs[(r - layout::OUTPUT) / 4][r % 4] = f,
        layout::A0X => state.a0[0] = bits as i32,
        layout::A0Y => state.a0[1] = bits as i32,
        layout::AL => state.al = bits as i32,
        r if r < layout::STATE_ROWS => state.cmp[r - layout::CMP] = bits != 0,
        _ => {}
    }
}

fn copy_masked(to: &mut Registers, from: &Registers, mask: u16) {
    for n in bits(mask) {
        to[n] = from[n];
    }
}
