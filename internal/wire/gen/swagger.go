package main

import (
	"bytes"
	"encoding/json"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"strings"
)

// The part of the swagger (OpenAPI 2.0) model the generator reads, and file I/O.

type spec struct {
	Paths       map[string]map[string]*operation `json:"paths"`
	Definitions map[string]*schema               `json:"definitions"`
}

type operation struct {
	Summary    string `json:"summary"`
	Parameters []struct {
		In     string  `json:"in"`
		Schema *schema `json:"schema"`
	} `json:"parameters"`
	Responses map[string]struct {
		Schema *schema `json:"schema"`
	} `json:"responses"`
}

type schema struct {
	Ref                  string          `json:"$ref"`
	Type                 string          `json:"type"`
	Format               string          `json:"format"`
	Title                string          `json:"title"`
	Description          string          `json:"description"`
	Enum                 []string        `json:"enum"`
	Items                *schema         `json:"items"`
	Properties           properties      `json:"properties"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Required             []string        `json:"required"`
}

// properties keeps the order of the swagger file, so struct fields (and
// their JSON encoding) follow the wire order.
type properties []property

type property struct {
	name   string
	schema *schema
}

func (p *properties) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		s := new(schema)
		if err := dec.Decode(s); err != nil {
			return err
		}
		*p = append(*p, property{tok.(string), s})
	}
	return nil
}

func (p properties) get(name string) *schema {
	for _, q := range p {
		if q.name == name {
			return q.schema
		}
	}
	return nil
}

func load(path string) *spec {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	s := new(spec)
	if err := json.Unmarshal(b, s); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	return s
}

func write(path string, src []byte) {
	out, err := format.Source(src)
	if err != nil {
		log.Fatalf("%s: gofmt: %v", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		log.Fatal(err)
	}
}

func refName(ref string) string { return strings.TrimPrefix(ref, "#/definitions/") }
