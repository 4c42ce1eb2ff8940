package judge

// Recheck recomputes a scenario's recorded checks from its history alone:
// each step's check through Recompute (by its kind and arguments, never its
// text), and the model's checks by judging the history again. A check made
// again once effects settled (a late recount) supersedes the check it
// recounts. Each returned check carries the recomputed outcome and the
// step index of the check it redoes; mismatch says the history contradicts
// what the run recorded.
func Recheck(checks []Check, ops []Op) (out []Check, mismatch bool) {
	superseded := map[string]bool{}
	for _, c := range checks {
		if c.Arg("late") != "" {
			superseded[c.Kind+"|"+c.Arg("token")+"|"+c.Arg("n")] = true
		}
	}
	for _, c := range checks {
		if c.Model || c.Status() == NotObserved || (c.Arg("late") == "" && superseded[c.Kind+"|"+c.Arg("token")+"|"+c.Arg("n")]) {
			continue
		}
		r, known := Recompute(c, ops)
		if !known {
			continue
		}
		rc := Check{Step: c.Step + " (recomputed from history)", State: Violated, Capability: c.Capability, StepIndex: c.StepIndex,
			Expected: r.Expected, Actual: r.Observed, Kind: c.Kind, Args: c.Args, Harm: c.Harm}
		if r.OK {
			rc.State = Held
		}
		out = append(out, rc)
		held := c.Status() == Held
		// A recomputation that sees only part of what the check saw (a
		// receipt, not the content) can confirm a violation, never clear one.
		if (held && !r.OK) || (r.Complete && !held && r.OK) {
			mismatch = true
		}
	}
	model, modelMismatch := recheckModel(checks, ops)
	return append(out, model...), mismatch || modelMismatch
}

// recheckModel judges the history again and holds the recorded model
// checks to what the model finds now: a violation the model finds that the
// record does not show, or one the record shows that the model does not
// find, is a mismatch. Histories without a target event predate the model
// and are left alone.
func recheckModel(checks []Check, ops []Op) (out []Check, mismatch bool) {
	if !HasFacts(ops) {
		return nil, false
	}
	recorded := map[string]string{}
	for _, c := range checks {
		if c.Model {
			recorded[c.identity()] = c.Status()
		}
	}
	for _, c := range Model(ops) {
		c.Step += " (recomputed from history)"
		out = append(out, c)
		state, ok := recorded[c.identity()]
		if !ok || state != c.Status() {
			mismatch = true
		}
		delete(recorded, c.identity())
	}
	for _, state := range recorded {
		if state == Violated {
			mismatch = true
		}
	}
	return out, mismatch
}

// identity is a check's kind and arguments, the same in a run and in its
// recomputation.
func (c Check) identity() string {
	s := c.Kind
	for _, k := range sortedKeys(c.Args) {
		s += "|" + k + "=" + c.Args[k]
	}
	return s
}
