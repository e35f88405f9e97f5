package mcp

import "github.com/google/jsonschema-go/jsonschema"

// anyJSON is anyValue's generic description, replaced by
// describeAnyValues where the field is known.
const anyJSON = "any JSON value"

// anyValue is the schema of a field that may hold any JSON value. The
// empty schema says the same but is marshalled as the boolean true, which
// the MCP specification (properties: {[key]: object}) and the TypeScript
// SDK refuse, so that no host could list the tools; a description keeps
// it an object without constraining the value.
func anyValue() *jsonschema.Schema { return &jsonschema.Schema{Description: anyJSON} }

// anyValueDescription says what a free-form field of an outcome holds.
func anyValueDescription(name string) string {
	switch name {
	case "result":
		return "the validated result, keyed by the paths the contract requires, once phase is succeeded; null before"
	case "provider_error":
		return "the provider's error as the contract's error_path keeps it, once phase is failed; null otherwise"
	}
	return anyJSON
}

// describeAnyValues gives the free-form fields under s, at any depth,
// their own description in place of anyValue's generic one.
func describeAnyValues(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if p.Description == anyJSON && p.Type == "" && len(p.Types) == 0 {
			p.Description = anyValueDescription(name)
		}
		describeAnyValues(p)
	}
	describeAnyValues(s.Items)
}
