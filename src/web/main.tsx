// The inspector page's entry point: /inspect/{addressId} names the address.
import { render } from 'preact';
import { App } from './app';
import './styles.css';

const addressId = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App addressId={addressId} />, root);
}
