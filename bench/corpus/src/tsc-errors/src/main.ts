import { UserStore } from './store';

const store = new UserStore();
store.add('ada', ['admin']);
store.add('linus');
console.log(store.names().join(', '));
