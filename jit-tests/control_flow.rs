//! Control flow: the CALL/IF/LOOP stacks, priorities, quirks, END, BREAK, budget,
//! geometry emits. Every case runs on every engine (see `common::Case::run`).

mod common;

use common::{Case, ONES, ZEROS, engines};
use pica_jit::{EmitConfig, Precision, Shader, Stop};

#[test]
fn ifu_true_runs_then_part_and_skips_else() {
    let src = "
        ifu b0, else, 2
        mov o0, c1
        mov o1, c1
    else:
        mov o2, c1
        mov o3, c1
        end
    ";
    let t = Case::new(src).b(0, true).run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!(
        [t.out(0), t.out(1), t.out(2), t.out(3)],
        [ONES, ONES, ZEROS, ZEROS]
    );
    let f = Case::new(src).b(0, false).run();
    assert_eq!(
        [f.out(0), f.out(1), f.out(2), f.out(3)],
        [ZEROS, ZEROS, ONES, ONES]
    );
}

#[test]
fn if_without_else() {
    let src = "
        ifu b3, endif, 0
        mov o0, c1
    endif:
        mov o1, c1
        end
    ";
    let t = Case::new(src).b(3, true).run();
    assert_eq!([t.out(0), t.out(1)], [ONES, ONES]);
    let f = Case::new(src).b(3, false).run();
    assert_eq!([f.out(0), f.out(1)], [ZEROS, ONES]);
}

#[test]
fn ifc_uses_cmp_flags_with_every_condop() {
    // cmp sets cmp.x = (v0.x == 1), cmp.y = (v0.y == 1); each condition's truth
    // table is its Rust reading.
    type Truth = fn(bool, bool) -> bool;
    let conds: [(&str, Truth); 6] = [
        ("cmp.x", |x, _| x),
        ("!cmp.y", |_, y| !y),
        ("cmp.x && !cmp.y", |x, y| x && !y),
        ("cmp.x || cmp.y", |x, y| x || y),
        ("!cmp.x || !cmp.y", |x, y| !x || !y),
        ("!cmp.x && !cmp.y", |x, y| !x && !y),
    ];
    for (cond, truth) in conds {
        let src = format!(
            "
            cmp v0, eq, eq, v1
            ifc {cond}, else, 1
            mov o0, c1
        else:
            mov o1, c1
            end
        "
        );
        for (x, y) in [(false, false), (true, false), (false, true), (true, true)] {
            let expect = truth(x, y);
            let v0 = [
                if x { 1.0 } else { 0.0 },
                if y { 1.0 } else { 0.0 },
                0.0,
                0.0,
            ];
            let t = Case::new(&src).input(0, v0).input(1, ONES).run();
            assert_eq!(t.state.cmp, [x, y]);
            assert_eq!(
                t.out(0),
                if expect { ONES } else { ZEROS },
                "{cond} with cmp = ({x}, {y})"
            );
            assert_eq!(
                t.out(1),
                if expect { ZEROS } else { ONES },
                "{cond} with cmp = ({x}, {y})"
            );
        }
    }
}

#[test]
fn call_returns_after_num_instructions() {
    let t = Case::new(
        "
        call sub, 2
        mov o1, c1
        end
    sub:
        mov o0, c1
        add r0, c1, r0
        mov o2, c1      ; not part of the subroutine
        end
    ",
    )
    .run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!(
        [t.out(0), t.out(1), t.out(2), t.temp(0)],
        [ONES, ONES, ZEROS, ONES]
    );
}

#[test]
fn callc_and_callu_only_call_when_true() {
    for (guard, b0, flags, called) in [
        ("callu b0", true, [false, false], true),
        ("callu b0", false, [false, false], false),
        ("callc cmp.y", false, [false, true], true),
        ("callc cmp.y", false, [true, false], false),
    ] {
        let src = format!(
            "
            {guard}, sub, 1
            mov o1, c1
            end
        sub:
            mov o0, c1
            end
        "
        );
        let t = Case::new(&src).b(0, b0).with_state(|s| s.cmp = flags).run();
        assert_eq!(t.out(0), if called { ONES } else { ZEROS }, "{guard}");
        assert_eq!(t.out(1), ONES, "{guard}");
    }
}

#[test]
fn end_inside_call_stops_the_invocation() {
    let t = Case::new(
        "
        call sub, 3
        mov o1, c1
        end
    sub:
        mov o0, c1
        end
        nop
    ",
    )
    .run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!([t.out(0), t.out(1)], [ONES, ZEROS]);
}

/// Five nested calls: the CALL stack holds four, so the outermost return is lost
/// and execution falls through past the first subroutine's end.
#[test]
fn call_stack_overflow_discards_the_oldest_return() {
    let nested = |levels: usize| {
        // Level k (1-based) calls level k+1; the innermost does `mov o3`.
        let mut src = String::from(
            "
            call l1, 2
            mov o0, c1          ; main continuation
            end
        ",
        );
        for k in 1..=levels {
            if k < levels {
                src += &format!(
                    "
        l{k}:
            call l{next}, 2
            mov o1.{lane}, c1
            {tail}
            end
        ",
                    next = k + 1,
                    lane = ["x", "y", "z", "w", "x"][k - 1],
                    tail = if k == 1 {
                        "mov o2, c1   ; reached only when l1's return was lost"
                    } else {
                        "nop"
                    },
                );
            } else {
                src += &format!(
                    "\n        l{k}:\n            mov o3, c1\n            nop\n            end\n"
                );
            }
        }
        Case::new(&src).run()
    };
    let five = nested(5);
    assert_eq!(five.stop, Stop::End);
    assert_eq!(
        [five.out(0), five.out(1), five.out(2), five.out(3)],
        [ZEROS, ONES, ONES, ONES]
    );
    let four = nested(4);
    assert_eq!(four.out(0), ONES);
    assert_eq!(four.out(2), ZEROS);
    assert_eq!(four.out(1), [1.0, 1.0, 1.0, 0.0]);
}

/// Four calls whose return points are each the enclosing subroutine's exit: one
/// instruction pops all four, and the fourth pop does not update the PC.
#[test]
fn fourth_chained_call_pop_misses_its_update() {
    let src = "
        call a, 2           ; 0
        mov o0, c1          ; 1: main continuation (return of the outermost call)
        end                 ; 2
    a:  mov o1.x, c1        ; 3
        call b, 2           ; 4: returns to 5 = a's exit
        mov o2, c1          ; 5: the quirk lands here
        end                 ; 6
    b:  mov o1.y, c1        ; 7
        call c, 2           ; 8: returns to 9 = b's exit
        end                 ; 9
    c:  mov o1.z, c1        ; 10
        call d, 2           ; 11: returns to 12 = c's exit
        end                 ; 12
    d:  mov o1.w, c1        ; 13
        nop                 ; 14: next = 15 = d's exit: four pops
        end                 ; 15
    ";
    let t = Case::new(src).run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!([t.out(0), t.out(1), t.out(2)], [ZEROS, ONES, ONES]);

    // With three chained pops every update is applied: back in main.
    let three = "
        call a, 2
        mov o0, c1
        end
    a:  mov o1.x, c1
        call b, 2
        mov o2, c1
        end
    b:  mov o1.y, c1
        call c, 2
        end
    c:  mov o1.z, c1
        nop
        end
    ";
    let t = Case::new(three).run();
    assert_eq!(
        [t.out(0), t.out(1), t.out(2)],
        [ONES, [1.0, 1.0, 1.0, 0.0], ZEROS]
    );
}

fn counting_loop(x: u8, y: u8, z: u8) -> common::Outcome {
    Case::new(
        "
        loop i0, last
        add r0, c1, r0
    last:
        add r1, c10[aL], r1
        mov o0, r0
        end
    ",
    )
    .i(0, [x, y, z, 0])
    .with_state(|_| ())
    .f(10, [1.0, 0.0, 0.0, 0.0])
    .f(11, [0.0, 10.0, 0.0, 0.0])
    .f(12, [0.0, 0.0, 100.0, 0.0])
    .run()
}

#[test]
fn loop_runs_x_plus_one_iterations_with_al() {
    let t = counting_loop(2, 0, 1);
    assert_eq!(t.temp(0), [3.0; 4]);
    // aL = 0, 1, 2 reads c10, c11, c12.
    assert_eq!(t.temp(1), [1.0, 10.0, 100.0, 0.0]);
    assert_eq!(t.state.al, 3);
}

#[test]
fn loop_with_zero_count_runs_once() {
    let t = counting_loop(0, 2, 5);
    assert_eq!(t.temp(0), ONES);
    assert_eq!(t.temp(1), [0.0, 0.0, 100.0, 0.0]);
    assert_eq!(t.state.al, 7);
}

#[test]
fn loop_with_count_255_runs_256_times() {
    let t = counting_loop(255, 0, 0);
    assert_eq!(t.temp(0), [256.0; 4]);
    assert_eq!(t.temp(1), [256.0, 0.0, 0.0, 0.0]);
    assert_eq!(t.state.al, 0);
    // The increment is unsigned: 200 + 256 * 255.
    let t = counting_loop(255, 200, 255);
    assert_eq!(t.state.al, 200 + 256 * 255);
}

/// Two loops ending on the same instruction: the LOOP stack pops once per
/// instruction, so when the inner loop finishes the outer one is not checked.
#[test]
fn nested_loops_ending_on_the_same_instruction() {
    let t = Case::new(
        "
        loop i0, last
        loop i1, last
        add r0, c1, r0
    last:
        add r1, c1, r1
        end
    ",
    )
    .i(0, [2, 0, 1, 0])
    .i(1, [3, 10, 2, 0])
    .run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!(t.temp(0), [4.0; 4]);
    assert_eq!(t.temp(1), [4.0; 4]);
    assert_eq!(t.state.al, 10 + 4 * 2);
}

#[test]
fn nested_loops_ending_apart_multiply() {
    let t = Case::new(
        "
        loop i0, outer_end
        loop i1, inner_end
    inner_end:
        add r0, c1, r0
    outer_end:
        add r1, c1, r1
        end
    ",
    )
    .i(0, [2, 0, 1, 0])
    .i(1, [3, 0, 1, 0])
    .run();
    assert_eq!(t.temp(0), [12.0; 4]);
    assert_eq!(t.temp(1), [3.0; 4]);
}

/// Five nested loops: the oldest (outermost) entry is discarded, so the outer
/// loop runs its body only once.
#[test]
fn loop_stack_overflow_discards_the_outermost_loop() {
    let src = "
        loop i0, e1
        loop i0, e2
        loop i0, e3
        loop i0, e4
        loop i0, e5
        add r0, c1, r0
    e5: add r1, c1, r1
    e4: add r2, c1, r2
    e3: add r3, c1, r3
    e2: add r4, c1, r4
    e1: add r5, c1, r5
        end
    ";
    let t = Case::new(src).i(0, [1, 0, 0, 0]).run();
    assert_eq!(t.stop, Stop::End);
    let counts: Vec<f32> = (0..6).map(|r| t.temp(r)[0]).collect();
    assert_eq!(counts, vec![16.0, 16.0, 8.0, 4.0, 2.0, 1.0]);

    // Four nested loops fit: every level doubles.
    let t = Case::new(
        "
        loop i0, e1
        loop i0, e2
        loop i0, e3
        loop i0, e4
    e4: add r1, c1, r1
    e3: add r2, c1, r2
    e2: add r3, c1, r3
    e1: add r4, c1, r4
        end
    ",
    )
    .i(0, [1, 0, 0, 0])
    .run();
    let counts: Vec<f32> = (1..5).map(|r| t.temp(r)[0]).collect();
    assert_eq!(counts, vec![16.0, 8.0, 4.0, 2.0]);
}

/// Nine nested true IFs: the IF stack holds eight, so the outermost entry is lost
/// and its else part runs.
#[test]
fn if_stack_overflow_discards_the_outermost_if() {
    let nested = |levels: usize| {
        let mut src = String::new();
        for k in 1..=levels {
            src += &format!("    ifu b0, else{k}, 1\n");
        }
        src += "    mov o0, c1\n";
        for k in (1..=levels).rev() {
            if k < levels {
                src += "    nop\n";
            }
            src += &format!("else{k}:\n    add r1, c1, r1\n");
        }
        src += "    end\n";
        Case::new(&src).b(0, true).run()
    };
    let nine = nested(9);
    assert_eq!(nine.out(0), ONES);
    assert_eq!(nine.temp(1), ONES, "exactly the outermost else part ran");
    let eight = nested(8);
    assert_eq!(eight.temp(1), ZEROS);
}

#[test]
fn jmp_as_last_instruction_of_an_if_is_overridden() {
    let src = "
        ifu b0, else, 1
        mov o0, c1
        jmpu b1, skip       ; last instruction of the then-part: the IF pop wins
    else:
        mov o1, c1
        mov o2, c1
    skip:
        mov o3, c1
        end
    ";
    let t = Case::new(src).b(0, true).b(1, true).run();
    assert_eq!(
        [t.out(0), t.out(1), t.out(2), t.out(3)],
        [ONES, ZEROS, ONES, ONES]
    );
    // The same jump elsewhere is taken.
    let t = Case::new("jmpu b1, skip\n mov o0, c1\n skip:\n mov o1, c1\n end")
        .b(1, true)
        .run();
    assert_eq!([t.out(0), t.out(1)], [ZEROS, ONES]);
}

#[test]
fn jmp_as_last_instruction_of_a_loop_is_overridden() {
    let t = Case::new(
        "
        loop i0, last
        add r0, c1, r0
    last:
        jmpu b1, out        ; the LOOP check wins, even on the final iteration
        mov o0, c1
    out:
        end
    ",
    )
    .i(0, [2, 0, 0, 0])
    .b(1, true)
    .run();
    assert_eq!(t.temp(0), [3.0; 4]);
    assert_eq!(t.out(0), ONES);
}

#[test]
fn jmp_as_last_instruction_of_a_call_is_overridden() {
    let t = Case::new(
        "
        call sub, 2
        mov o0, c1
        end
    sub:
        mov o1, c1
        jmpu b0, away
    away:
        mov o2, c1
        end
    ",
    )
    .b(0, true)
    .run();
    assert_eq!([t.out(0), t.out(1), t.out(2)], [ONES, ONES, ZEROS]);
}

#[test]
fn if_beats_call_when_both_pop() {
    let t = Case::new(
        "
        call sub, 3
        end
    sub:
        ifu b0, else, 2
        mov o0, c1
        mov o1, c1
    else:
        mov o2, c1
        mov o3, c1
        mov o4, c1
        end
    ",
    )
    .b(0, true)
    .run();
    // After `mov o1` both the IF (else) and the CALL (exit) match: IF wins and
    // continues at else + 2; the CALL entry is consumed.
    assert_eq!(
        [t.out(0), t.out(1), t.out(2), t.out(3), t.out(4)],
        [ONES, ONES, ZEROS, ZEROS, ONES]
    );
}

#[test]
fn loop_beats_call_when_both_match() {
    let t = Case::new(
        "
        call sub, 2
        mov o0, c1
        end
    sub:
        loop i0, last
    last:
        add r0, c1, r0      ; exit of both the loop body and the subroutine
        mov o1, c1
        end
    ",
    )
    .i(0, [1, 0, 0, 0])
    .run();
    // Iteration 1: LOOP repeats (CALL entry consumed). Iteration 2: LOOP exits at
    // last + 1, so the return to main is lost.
    assert_eq!(t.temp(0), [2.0; 4]);
    assert_eq!([t.out(0), t.out(1)], [ZEROS, ONES]);
}

#[test]
fn jmpc_and_jmpu_inversion_bit() {
    for (line, b0, flags, taken) in [
        ("jmpu b0, skip", true, [false, false], true),
        ("jmpu b0, skip", false, [false, false], false),
        ("jmpu !b0, skip", false, [false, false], true),
        ("jmpu !b0, skip", true, [false, false], false),
        ("jmpc cmp.x, skip", false, [true, false], true),
        ("jmpc cmp.x, skip", false, [false, false], false),
        ("jmpc !(cmp.x), skip", false, [true, false], false),
        ("jmpc !(cmp.x), skip", false, [false, false], true),
    ] {
        let src = format!("{line}\n mov o0, c1\n skip:\n end");
        let t = Case::new(&src).b(0, b0).with_state(|s| s.cmp = flags).run();
        assert_eq!(
            t.out(0),
            if taken { ZEROS } else { ONES },
            "{line} b0={b0} cmp={flags:?}"
        );
    }
}

#[test]
fn break_leaves_the_loop() {
    let t = Case::new(
        "
        loop i0, last
        add r0, c1, r0
        cmp c2, le, le, r0      ; cmp.x = 3 <= r0.x
        breakc cmp.x
    last:
        add r1, c1, r1
        mov o0, r0
        end
    ",
    )
    .i(0, [9, 5, 1, 0])
    .f(2, [3.0; 4])
    .run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!(t.temp(0), [3.0; 4]);
    assert_eq!(t.temp(1), [2.0; 4]);
    assert_eq!(t.out(0), [3.0; 4]);
    // Two completed iterations incremented aL; the break does not.
    assert_eq!(t.state.al, 7);

    let t = Case::new(
        "
        loop i0, last
        add r0, c1, r0
        break
    last:
        add r1, c1, r1
        end
    ",
    )
    .i(0, [9, 0, 1, 0])
    .run();
    assert_eq!([t.temp(0), t.temp(1)], [ONES, ZEROS]);
}

#[test]
fn breakc_false_continues() {
    let t = Case::new(
        "
        loop i0, last
        breakc cmp.x
    last:
        add r0, c1, r0
        end
    ",
    )
    .i(0, [4, 0, 0, 0])
    .run();
    assert_eq!(t.temp(0), [5.0; 4]);
}

#[test]
fn break_from_a_called_subroutine_leaves_the_loop() {
    let t = Case::new(
        "
        loop i0, last
        callu b0, sub, 2
    last:
        add r0, c1, r0
        mov o0, c1
        end
    sub:
        break
        nop
        end
    ",
    )
    .i(0, [4, 0, 0, 0])
    .b(0, true)
    .run();
    // The break pops the loop and jumps past it; the CALL entry stays behind.
    assert_eq!(t.stop, Stop::End);
    assert_eq!([t.temp(0), t.out(0)], [ZEROS, ONES]);
}

#[test]
fn break_with_empty_loop_stack_stops_as_a_hang() {
    let t = Case::new("mov o0, c1\n break\n mov o1, c1\n end").run();
    assert_eq!(t.stop, Stop::BreakOutsideLoop);
    assert_eq!(t.stop.status(), pica_jit::RunStatus::BudgetExceeded);
    assert_eq!([t.out(0), t.out(1)], [ONES, ZEROS]);
}

#[test]
fn budget_stops_runaway_programs_exactly() {
    let src = "
    top:
        add r0, c1, r0
        jmpu b0, top
        end
    ";
    let t = Case::new(src).b(0, true).budget(101).run();
    assert_eq!(t.stop, Stop::BudgetExceeded);
    // 101 instructions: 51 adds and 50 jumps.
    assert_eq!(t.temp(0), [51.0; 4]);

    // A program that needs exactly N instructions finishes with budget N, not N - 1.
    let three = "add r0, c1, r0\n add r0, c1, r0\n end";
    assert_eq!(Case::new(three).budget(3).run().stop, Stop::End);
    let short = Case::new(three).budget(2).run();
    assert_eq!(short.stop, Stop::BudgetExceeded);
    assert_eq!(short.temp(0), [2.0; 4]);
    assert_eq!(Case::new(three).budget(0).run().temp(0), ZEROS);
}

/// A budget that runs out inside a loop body, a subroutine or a then-part hands
/// the live stacks over (the JIT continues in the interpreter with them): every
/// budget from 0 to the whole run gives the interpreter's exact state.
#[test]
fn budget_stops_inside_loops_calls_and_ifs_hand_over_their_stacks() {
    let src = "
        loop i0, last
        call sub, 1
        ifu b0, skip, 1
        add r0, c1, r0
    skip:
        add r2, c1, r2      ; the else part, skipped while b0 is true
    last:
        add r1, c1, r1
        mov o0, r1
        end
    sub:
        add r3, c1, r3
        end
    ";
    let case = |budget| Case::new(src).i(0, [3, 0, 1, 0]).b(0, true).budget(budget);
    let full = case(u64::MAX).run();
    assert_eq!(full.stop, Stop::End);
    // Four iterations of call, subroutine, then-part and loop tail.
    assert_eq!(
        [full.temp(0), full.temp(1), full.temp(2), full.temp(3)],
        [[4.0; 4], [4.0; 4], ZEROS, [4.0; 4]]
    );
    let mut stopped_inside = 0;
    for budget in 0..40 {
        let t = case(budget).run();
        if t.stop == Stop::BudgetExceeded && t.temp(1)[0] < 4.0 {
            stopped_inside += 1;
        }
    }
    assert!(
        stopped_inside > 20,
        "only {stopped_inside} budgets stopped in the loop"
    );
}

/// Code for a program whose PC only moves forward does not count a budget it
/// cannot exhaust; run with a smaller budget than it was compiled for, it
/// still stops exactly where the interpreter does.
#[test]
fn uncounted_code_still_honours_a_smaller_budget() {
    let t = Case::new("add r0, c1, r0\n add r0, c1, r0\n add r0, c1, r0\n end");
    let full = t.run();
    assert_eq!((full.stop, full.temp(0)), (Stop::End, [3.0; 4]));
    if !common::jit_available("uncounted_code_still_honours_a_smaller_budget") {
        return;
    }
    let code = pica_jit::jit::compile_with(&t.program, &t.config, pica_jit::jit::Features::host())
        .expect("compiles");
    for budget in 0..5 {
        let config = pica_jit::ShaderConfig { budget, ..t.config };
        let mut state = t.state.clone();
        let stop = code.run(
            &t.program,
            &config,
            &t.uniforms,
            &mut state,
            &mut Vec::new(),
        );
        let expected = t.clone().budget(budget).run();
        assert_eq!(
            (stop, state.temps[0]),
            (expected.stop, expected.temp(0)),
            "budget {budget}"
        );
    }
}

#[test]
fn default_budget_stops_an_infinite_loop() {
    let t = Case::new("top:\n jmpu !b0, top\n end").run();
    assert_eq!(t.stop, Stop::BudgetExceeded);
}

#[test]
fn running_off_the_end_of_code_ends_normally() {
    let t = Case::new("mov o0, c1\n mov o1, c1").run();
    assert_eq!(t.stop, Stop::EndOfCode);
    assert_eq!([t.out(0), t.out(1)], [ONES, ONES]);
    // A jump past the code also ends the invocation.
    let t = Case::new("jmpu !b0, 200\n mov o0, c1\n end").run();
    assert_eq!(t.stop, Stop::EndOfCode);
    assert_eq!(t.out(0), ZEROS);
    assert_eq!(t.stop.status(), pica_jit::RunStatus::Ok);
}

#[test]
fn entry_point_other_than_zero() {
    let t = Case::new("mov o0, c1\n end\n mov o1, c1\n end")
        .entry(2)
        .run();
    assert_eq!([t.out(0), t.out(1)], [ZEROS, ONES]);
}

#[test]
fn unknown_opcodes_execute_as_nops_and_count() {
    let t = Case::new("unk 0x14\n unk 0x1f\n mov o0, c1\n end")
        .budget(4)
        .run();
    assert_eq!(t.stop, Stop::End);
    assert_eq!(t.out(0), ONES);
    // The two unknown words count: with budget 3 the END never runs.
    let t = Case::new("unk 0x14\n unk 0x1f\n mov o0, c1\n end")
        .budget(3)
        .run();
    assert_eq!(t.stop, Stop::BudgetExceeded);
    assert_eq!(t.out(0), ONES);
}

const GS: &str = "
    mov o0, c1
    emit
    setemit 1
    mov o0, c2
    emit
    setemit 2, prim, inv
    mov o1, c3
    emit
    end
";

#[test]
fn geometry_shader_emits_in_order() {
    let t = Case::new(GS).geometry().f(2, [2.0; 4]).f(3, [3.0; 4]).run();
    let summary: Vec<_> = t
        .emits
        .iter()
        .map(|e| {
            (
                e.vertex_id,
                e.primitive,
                e.winding,
                e.outputs[0][0],
                e.outputs[1][0],
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, false, false, 1.0, 0.0),
            (1, false, false, 2.0, 0.0),
            (2, true, true, 2.0, 3.0)
        ]
    );
}

/// `setemit` in one invocation, `emit` in the next: the emitter's state is part
/// of `UnitState`, carried like the registers (docs/semantics.md, "Geometry
/// shaders"); a caller that resets it gets `setemit 0`'s defaults. Every engine.
#[test]
fn setemit_state_is_carried_to_the_next_invocation() {
    const SET_THEN_EMIT: &str = "
        jmpu b0, emit_part
        setemit 2, prim, inv
        end
    emit_part:
        mov o0, c1
        emit
        end
    ";
    let carried = EmitConfig {
        vertex_id: 2,
        primitive: true,
        winding: true,
    };
    // Run 1 (b0 false): only `setemit`; nothing is emitted, the state keeps it.
    let set = Case::new(SET_THEN_EMIT).geometry().run();
    assert_eq!(set.stop, Stop::End);
    assert!(set.emits.is_empty());
    assert_eq!(set.state.emit, carried);
    // Run 2 (b0 true) from run 1's final state: `emit` uses run 1's `setemit`.
    let emit = Case::new(SET_THEN_EMIT)
        .geometry()
        .b(0, true)
        .with_state(|s| *s = set.state.clone())
        .run();
    let got: Vec<_> = emit
        .emits
        .iter()
        .map(|e| (e.vertex_id, e.primitive, e.winding, e.outputs[0]))
        .collect();
    assert_eq!(got, vec![(2, true, true, ONES)]);
    assert_eq!(emit.state.emit, carried, "emit does not change it");
    // A caller that resets the emitter gets the defaults.
    let reset = Case::new(SET_THEN_EMIT)
        .geometry()
        .b(0, true)
        .with_state(|s| {
            *s = set.state.clone();
            s.emit = EmitConfig::default();
        })
        .run();
    let got: Vec<_> = reset
        .emits
        .iter()
        .map(|e| (e.vertex_id, e.primitive, e.winding))
        .collect();
    assert_eq!(got, vec![(0, false, false)]);
    // Each engine on its own, not only in agreement with the interpreter.
    for engine in engines() {
        let mut state = set.state.clone();
        let case = Case::new(SET_THEN_EMIT).geometry().b(0, true);
        let shader = Shader::new(case.program.clone(), case.config, engine).expect("shader");
        let mut emits = Vec::new();
        assert_eq!(
            shader.run(&case.uniforms, &mut state, &mut emits),
            Stop::End
        );
        assert_eq!(
            emits
                .iter()
                .map(|e| (e.vertex_id, e.primitive, e.winding))
                .collect::<Vec<_>>(),
            vec![(2, true, true)],
            "{engine}"
        );
    }
    // A vertex shader never changes it.
    let vertex = Case::new(SET_THEN_EMIT)
        .with_state(|s| s.emit = carried)
        .run();
    assert_eq!(vertex.state.emit, carried);
}

#[test]
fn vertex_shader_ignores_emit_and_setemit() {
    let t = Case::new(GS).f(2, [2.0; 4]).f(3, [3.0; 4]).run();
    assert!(t.emits.is_empty());
    assert_eq!(t.stop, Stop::End);
    assert_eq!([t.out(0), t.out(1)], [[2.0; 4], [3.0; 4]]);
}

#[test]
fn state_carries_over_between_invocations_when_kept() {
    let case = Case::new("add r0, c1, r0\n mova a0.x, r0\n end").precision(Precision::F24);
    let first = case.run();
    assert_eq!(first.temp(0), ONES);
    assert_eq!(first.state.a0, [1, 0]);
    let mut second = Case::new("add r0, c1, r0\n mova a0.x, r0\n end");
    second.state = first.state.clone();
    let second = second.run();
    assert_eq!(second.temp(0), [2.0; 4]);
    assert_eq!(second.state.a0, [2, 0]);
}

#[test]
fn missing_descriptors_read_as_word_zero() {
    use pica_jit::isa::{DstReg, Instruction, Source, SrcReg, UnaryOp, encode};
    // `mov o0, v0` with descriptor 5 but only one descriptor supplied: word 0 has
    // an empty write mask, so nothing is written; a cmp with descriptor 9 reads
    // `.xxxx` selectors without negation.
    let mov = Instruction::Unary {
        op: UnaryOp::Mov,
        dst: DstReg::Output(0),
        src: Source::direct(SrcReg::Input(0)),
        desc: 5,
    };
    let cmp = Instruction::Cmp {
        src1: Source::direct(SrcReg::Input(0)),
        src2: Source::direct(SrcReg::Input(1)),
        x: pica_jit::isa::CmpOp::Eq,
        y: pica_jit::isa::CmpOp::Eq,
        desc: 9,
    };
    let full = pica_jit::isa::OperandDescriptor::new(
        pica_jit::isa::WriteMask::ALL,
        [(false, pica_jit::isa::Swizzle::IDENTITY); 3],
    );
    let code = [mov, cmp, Instruction::End]
        .iter()
        .map(|i| encode(i).unwrap())
        .collect();
    let program = pica_jit::Program::new(code, vec![full.0]).unwrap();
    let t = Case::from_program(program)
        .input(0, [1.0, 2.0, 3.0, 4.0])
        .input(1, [1.0, 1.0, 1.0, 1.0])
        .run();
    assert_eq!(t.out(0), ZEROS);
    // .xxxx: cmp.x = (1 == 1), cmp.y = (v0.x == v1.x) = true as well.
    assert_eq!(t.state.cmp, [true, true]);
}

#[test]
fn entry_point_outside_the_program_is_an_error() {
    use pica_jit::{EngineError, EngineKind, Shader, ShaderConfig};
    let program = std::sync::Arc::new(common::assemble("end").program());
    for engine in [EngineKind::Interpreter, EngineKind::Auto] {
        let config = ShaderConfig {
            entry: 1,
            ..ShaderConfig::default()
        };
        let err = Shader::new(program.clone(), config, engine).unwrap_err();
        assert_eq!(err, EngineError::EntryOutOfRange { entry: 1, len: 1 });
        assert!(err.to_string().contains("outside the program"));
    }
}

/// Structured `if`/`else` and forward jumps (on x86-64 the stacks are then
/// compile-time facts, `analysis::static_flow`, and the code only branches):
/// every guard kind and jump inversion, and a then part ending in a jump the
/// IF pop overrides, against values worked out by hand.
#[test]
fn static_if_else_and_jumps_follow_every_guard() {
    let src = "
        cmp v0, eq, eq, v1
        ifu b0, else, 1
        add r0, c1, r0
        jmpc cmp.x, over    ; last instruction of the then part: the IF pop wins
    else:
        add r1, c1, r1
    skip:
        ifc !cmp.y, next, 0
        add r2, c1, r2
    next:
        jmpu !b1, over
        add r3, c1, r3
    over:
        ifc cmp.x && cmp.y, last, 0
        add r4, c1, r4
    last:
        end
    ";
    for bits in 0..16u32 {
        let [b0, b1, x, y] = [0, 1, 2, 3].map(|k| bits >> k & 1 != 0);
        let v0 = [x, y, false, false].map(|c| if c { 1.0 } else { 0.0 });
        let t = Case::new(src)
            .b(0, b0)
            .b(1, b1)
            .input(0, v0)
            .input(1, ONES)
            .run();
        let ran = |r: bool| if r { ONES } else { ZEROS };
        let expect = [b0, !b0, !y, b1, x && y];
        let got = [t.temp(0), t.temp(1), t.temp(2), t.temp(3), t.temp(4)];
        assert_eq!(got, expect.map(ran), "b0 {b0} b1 {b1} cmp ({x}, {y})");
    }
}

/// A jump into a then part arrives there with another IF stack than the
/// `if` leaves (static stacks must be refused): when the `if` pushed, its
/// entry pops after the then part and skips the else part; when the jump
/// arrived, nothing pops and the else part runs.
#[test]
fn a_jump_into_an_if_part_keeps_the_exact_stack() {
    let src = "
        jmpu b1, then
        ifu b0, else, 1
    then:
        add r0, c1, r0
    else:
        add r1, c1, r1
        end
    ";
    for (b0, b1, r0, r1) in [
        (false, false, ZEROS, ONES),
        (true, false, ONES, ZEROS),
        (false, true, ONES, ONES),
        (true, true, ONES, ONES),
    ] {
        let t = Case::new(src).b(0, b0).b(1, b1).run();
        assert_eq!([t.temp(0), t.temp(1)], [r0, r1], "b0 {b0} b1 {b1}");
    }
}
