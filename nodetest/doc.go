// Package nodetest is a CSI node plugin for tests (NodePlugin: the Node
// service a kubelet registers and calls, recording every call), and the
// tests of the writer under Kubernetes' own kubelet that need it.
//
// It is a module of its own, a test module: the CSI spec, gRPC and the
// kubelet's plugin-registration API it needs are no requirement of the
// writer's module (apply), so a program that imports the writer does not
// get them.
package nodetest
