// The website's stand-in for a widget model: model.get/set/on/off/save_changes
// over a plain object, so that an anywidget module runs in a static page with
// no kernel. set() tells the listeners of "change:<name>", as a widget model does.
export function localModel(state) {
  const listeners = new Map();
  return {
    get: (name) => state[name],
    set(name, value) {
      if (state[name] === value) return;
      state[name] = value;
      for (const callback of listeners.get(`change:${name}`) || []) callback();
    },
    on(event, callback) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(callback);
    },
    off(event, callback) {
      listeners.get(event)?.delete(callback);
    },
    save_changes() {},
  };
}
