package signature

// SubjectURI returns the skill URI the statement of bundle raw names,
// nothing verified: a host that reads a skill without its path (a site's
// discovery document names skills by name) lays the skill out at the
// path its publisher signed, and Verify then decides whether the
// signature holds for it.
func SubjectURI(raw []byte) (string, error) {
	_, st, err := parseBundle(raw)
	if err != nil {
		return "", err
	}
	return st.Subject[0].Name, nil
}
