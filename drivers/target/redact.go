package target

import "maps"

// RedactedSecret stands in for every credential in a redacted profile.
const RedactedSecret = "[redacted]"

// Redacted is a copy of the profile fit to hand to a third party (a
// certification bundle): every credential, the control token, API keys and
// principal tokens, is replaced by RedactedSecret; everything that says how
// the gateway was driven stays. A secret field added to Profile belongs here.
func (p Profile) Redacted() Profile {
	hide := func(s string) string {
		if s == "" {
			return ""
		}
		return RedactedSecret
	}
	p.ControlToken = hide(p.ControlToken)
	c := p.Credentials
	if c.APIKeys != nil {
		keys := make([]string, len(c.APIKeys))
		for i, k := range c.APIKeys {
			keys[i] = hide(k)
		}
		c.APIKeys = keys
	}
	if c.PrincipalTokens != nil {
		toks := maps.Clone(c.PrincipalTokens)
		for name, tok := range toks {
			toks[name] = hide(tok)
		}
		c.PrincipalTokens = toks
	}
	if c.OtherWallet != nil {
		o := *c.OtherWallet
		o.APIKey = hide(o.APIKey)
		c.OtherWallet = &o
	}
	p.Credentials = c
	return p
}
