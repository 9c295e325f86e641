package shaders

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// module is what the contract test reads from a SPIR-V module: its names, decorations, types, specialization
// constants and variables.
type module struct {
	names       map[uint32]string
	memberNames map[[2]uint32]string
	decos       map[uint32]map[uint32][]uint32    // id → decoration → operands
	memberDecos map[[2]uint32]map[uint32][]uint32 // (struct, member) → decoration → operands
	types       map[uint32]spvType                // type id → its declaration
	specs       []spvSpec                         // specialization constants
	vars        []spvVar                          // module-scope variables
	ints        map[uint32]uint32                 // OpConstant of 32-bit integers: id → value
}

type spvType struct {
	op   uint32
	args []uint32 // operands after the result id
}

// spvSpec is a specialization constant: its SpecId, default, name (without -O only), and whether it is a
// component of the workgroup size (local_size_x_id), whose default is the size's, not the constant's.
type spvSpec struct {
	id, value uint32
	name      string
	wgSize    bool
}

type spvVar struct {
	id, typ, class uint32
}

// SPIR-V opcodes, decorations and storage classes the test reads.
const (
	opName            = 5
	opMemberName      = 6
	opTypeInt         = 21
	opTypeVector      = 23
	opTypeArray       = 28
	opTypeRuntimeArr  = 29
	opTypeStruct      = 30
	opTypePointer     = 32
	opConstant        = 43
	opSpecConstant    = 50
	opSpecComposite   = 51
	decoBuiltIn       = 11
	builtInWGSize     = 25
	opVariable        = 59
	opDecorate        = 71
	opMemberDecorate  = 72
	decoSpecID        = 1
	decoCoherent      = 23
	decoNonWritable   = 24
	decoNonReadable   = 25
	decoBinding       = 33
	decoDescriptorSet = 34
	decoOffset        = 35
	classPushConstant = 9
	classStorageBuf   = 12
	classUniform      = 2
)

// parseSPIRV reads a module: it fails on a malformed one.
func parseSPIRV(b []byte) (*module, error) {
	if len(b)%4 != 0 || len(b) < 20 {
		return nil, fmt.Errorf("spirv: %d bytes", len(b))
	}
	w := make([]uint32, len(b)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	if w[0] != 0x07230203 {
		return nil, fmt.Errorf("spirv: magic %#x", w[0])
	}
	m := &module{names: map[uint32]string{}, memberNames: map[[2]uint32]string{}, decos: map[uint32]map[uint32][]uint32{},
		memberDecos: map[[2]uint32]map[uint32][]uint32{}, types: map[uint32]spvType{}, ints: map[uint32]uint32{}}
	specValue := map[uint32]uint32{} // result id → default, before SpecId decorations are matched
	var order []uint32               // spec constants' result ids in module order
	composites := map[uint32][]uint32{}
	for i := 5; i < len(w); {
		op, n := w[i]&0xFFFF, int(w[i]>>16)
		if n == 0 || i+n > len(w) {
			return nil, fmt.Errorf("spirv: bad instruction at word %d", i)
		}
		a := w[i+1 : i+n]
		switch op {
		case opName:
			m.names[a[0]] = spvString(a[1:])
		case opMemberName:
			m.memberNames[[2]uint32{a[0], a[1]}] = spvString(a[2:])
		case opDecorate:
			if m.decos[a[0]] == nil {
				m.decos[a[0]] = map[uint32][]uint32{}
			}
			m.decos[a[0]][a[1]] = a[2:]
		case opMemberDecorate:
			k := [2]uint32{a[0], a[1]}
			if m.memberDecos[k] == nil {
				m.memberDecos[k] = map[uint32][]uint32{}
			}
			m.memberDecos[k][a[2]] = a[3:]
		case opTypeInt, opTypeVector, opTypeArray, opTypeRuntimeArr, opTypeStruct, opTypePointer:
			m.types[a[0]] = spvType{op, append([]uint32(nil), a[1:]...)}
		case opConstant:
			if len(a) == 3 {
				m.ints[a[1]] = a[2]
			}
		case opSpecConstant:
			specValue[a[1]] = a[2]
			order = append(order, a[1])
		case opSpecComposite:
			composites[a[1]] = append([]uint32(nil), a[2:]...)
		case opVariable:
			m.vars = append(m.vars, spvVar{id: a[1], typ: a[0], class: a[2]})
		}
		i += n
	}
	wg := map[uint32]bool{}
	for id, parts := range composites {
		if b, ok := m.decos[id][decoBuiltIn]; ok && b[0] == builtInWGSize {
			for _, p := range parts {
				wg[p] = true
			}
		}
	}
	for _, id := range order {
		if d, ok := m.decos[id][decoSpecID]; ok {
			m.specs = append(m.specs, spvSpec{id: d[0], value: specValue[id], name: m.names[id], wgSize: wg[id]})
		}
	}
	return m, nil
}

// spvString decodes a nul-terminated literal string.
func spvString(w []uint32) string {
	var sb strings.Builder
	for _, x := range w {
		for k := 0; k < 4; k++ {
			c := byte(x >> (8 * k))
			if c == 0 {
				return sb.String()
			}
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// glslType names a type as the contracts do: uint, uvec2, uvec4; "" for anything else.
func (m *module) glslType(id uint32) string {
	t := m.types[id]
	switch t.op {
	case opTypeInt:
		if t.args[0] == 32 && t.args[1] == 0 {
			return "uint"
		}
	case opTypeVector:
		if m.glslType(t.args[0]) == "uint" {
			return fmt.Sprintf("uvec%d", t.args[1])
		}
	case opTypeArray:
		if m.glslType(t.args[0]) == "uint" {
			return fmt.Sprintf("uint[%d]", m.ints[t.args[1]])
		}
	}
	return ""
}

// bufferView is a storage-buffer block as the module declares it.
type bufferView struct {
	set, binding         uint32
	elem                 string // element type of its runtime array
	nonWritable, nonRead bool
	coherent             bool
	block, array         string // names (modules compiled without -O only)
}

// pushMemberSPV is a member of the push-constant block.
type pushMemberSPV struct {
	name   string // without -O only
	typ    string
	offset uint32
}

// buffers lists the module's storage-buffer variables.
func (m *module) buffers() ([]bufferView, error) {
	var out []bufferView
	for _, v := range m.vars {
		p := m.types[v.typ]
		if p.op != opTypePointer || (v.class != classStorageBuf && v.class != classUniform) {
			continue
		}
		st := p.args[1]
		if m.types[st].op != opTypeStruct || len(m.types[st].args) != 1 {
			return nil, fmt.Errorf("buffer variable %d: not a block of one runtime array", v.id)
		}
		arr := m.types[m.types[st].args[0]]
		if arr.op != opTypeRuntimeArr {
			return nil, fmt.Errorf("buffer variable %d: its member is not a runtime array", v.id)
		}
		d, md := m.decos[v.id], m.memberDecos[[2]uint32{st, 0}]
		set, ok1 := d[decoDescriptorSet]
		bind, ok2 := d[decoBinding]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("buffer variable %d: no descriptor set or binding", v.id)
		}
		_, nw := md[decoNonWritable]
		_, nr := md[decoNonReadable]
		_, co := md[decoCoherent]
		out = append(out, bufferView{set: set[0], binding: bind[0], elem: m.glslType(arr.args[0]), nonWritable: nw,
			nonRead: nr, coherent: co, block: m.names[st], array: m.memberNames[[2]uint32{st, 0}]})
	}
	return out, nil
}

// push returns the members of the push-constant block, nil if the module has none.
func (m *module) push() ([]pushMemberSPV, error) {
	var out []pushMemberSPV
	found := false
	for _, v := range m.vars {
		if v.class != classPushConstant {
			continue
		}
		if found {
			return nil, fmt.Errorf("two push-constant variables")
		}
		found = true
		st := m.types[m.types[v.typ].args[1]]
		sid := m.types[v.typ].args[1]
		if st.op != opTypeStruct {
			return nil, fmt.Errorf("push-constant variable %d is not a struct", v.id)
		}
		for i, mt := range st.args {
			off, ok := m.memberDecos[[2]uint32{sid, uint32(i)}][decoOffset]
			if !ok {
				return nil, fmt.Errorf("push member %d has no Offset", i)
			}
			out = append(out, pushMemberSPV{name: m.memberNames[[2]uint32{sid, uint32(i)}], typ: m.glslType(mt),
				offset: off[0]})
		}
	}
	return out, nil
}
